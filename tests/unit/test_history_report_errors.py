"""`history report` tells bad input (exit 2) from a failed Spark job (exit 1, with the error),
instead of turning every Spark failure into "holds no exported history" (exit 2)."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException

from offsetkeeper.errors import OffsetkeeperError, UsageError
from offsetkeeper.history.spark_report import daily_report
from tests.cli import run_cli


class _Reader:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def parquet(self, src: str):
        raise self.exc


class FakeSpark:
    """A session whose read fails with the given exception (no JVM)."""

    def __init__(self, exc: Exception) -> None:
        self.read = _Reader(exc)


CASES = [
    (AnalysisException(message="[PATH_NOT_FOUND] Path does not exist: file:/nope."), 2,
     "holds no exported history ([PATH_NOT_FOUND] Path does not exist"),
    (AnalysisException(message="[UNABLE_TO_INFER_SCHEMA] Unable to infer schema for Parquet."),
     2, "UNABLE_TO_INFER_SCHEMA"),
    (AnalysisException(message="[UNRESOLVED_COLUMN.WITH_SUGGESTION] `lag` cannot be resolved."),
     2, "UNRESOLVED_COLUMN"),
    (RuntimeError("Job aborted due to stage failure: Task 3 lost\nat org.apache..."), 1,
     "the Spark job failed: RuntimeError: Job aborted due to stage failure: Task 3 lost"),
    (PermissionError("[Errno 13] Permission denied: '/data/history'"), 1,
     "the Spark job failed: PermissionError: [Errno 13] Permission denied"),
    (ConnectionRefusedError(), 1, "the Spark job failed: ConnectionRefusedError"),
]


@pytest.mark.parametrize("exc, code, message", CASES)
def test_bad_input_is_a_usage_error_and_a_failed_job_an_operation_error(exc, code, message):
    """Invariant: Spark's analysis errors (no such path, no Parquet, not the exported columns)
    are bad input, exit 2; any other failure of the job is exit 1 and names the error (its
    first line, never a Java stack)."""
    with pytest.raises(OffsetkeeperError) as err:
        daily_report(FakeSpark(exc), "/data/history")
    assert err.value.exit_code == code
    assert isinstance(err.value, UsageError) is (code == 2)
    assert message in err.value.message and "org.apache" not in err.value.message
    assert err.value.__cause__ is exc


@pytest.mark.parametrize("exc, code, message", [
    (CASES[0][0], 2, "holds no exported history"),
    (CASES[3][0], 1, "Job aborted due to stage failure"),
])
def test_the_command_exits_with_the_code_and_prints_the_message(capsys, monkeypatch, exc, code,
                                                                  message):
    """Invariant: the CLI exits 2 for bad input and 1 for a failed job, with one line on
    stderr."""
    import offsetkeeper.spark.session as session

    monkeypatch.setattr(session, "get_spark", lambda *a, **k: FakeSpark(exc))
    r = run_cli(capsys, "history", "report", "--from", "/data/history")
    assert r.code == code
    assert message in " ".join(r.err.split())
    assert r.out == ""
