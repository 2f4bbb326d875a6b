"""offsetkeeper's own Spark tasks, both ways (`offsetkeeper.spark.tasks`) on a real session."""

from __future__ import annotations

import json
from functools import partial

import pytest

from offsetkeeper.errors import StoreError
from offsetkeeper.spark.task_failure import TaskFailure, guarded, raise_failures
from offsetkeeper.spark.tasks import is_connect, run_tasks, task_slots

pytestmark = [pytest.mark.spark]


def _task(cfg, specs):
    """A task: one row per spec, or a typed failure for a bad one."""
    for raw in specs:
        spec = json.loads(raw)
        if spec["n"] < 0:
            raise StoreError(f"bad spec {spec['n']}", topic=cfg["topic"], partition=spec["n"])
        yield {"n": spec["n"], "square": spec["n"] ** 2, "topic": cfg["topic"]}


@pytest.mark.spark_oldest
@pytest.mark.parametrize("way", ["rdd", "dataframe"])
def test_each_spec_runs_once_in_its_own_task_and_failures_come_back_typed(spark, way):
    """Both ways return exactly the rows of every spec (one task per spec); a failing spec comes
    back as a TaskFailure row that raise_failures turns into the typed error."""
    specs = [json.dumps({"n": i}) for i in range(5)]
    rows = run_tasks(spark, partial(guarded, _task, {"topic": "t"}), specs, way=way)
    assert sorted(r["n"] for r in rows) == list(range(5))
    assert all(r["square"] == r["n"] ** 2 and r["topic"] == "t" for r in rows)

    rows = run_tasks(spark, partial(guarded, _task, {"topic": "t"}),
                     [*specs[:2], json.dumps({"n": -3})], way=way)
    failures = [r for r in rows if isinstance(r, TaskFailure)]
    assert len(failures) == 1 and failures[0].kind == "StoreError" and failures[0].partition == -3
    with pytest.raises(StoreError, match="bad spec -3"):
        raise_failures(rows, StoreError)
    assert run_tasks(spark, partial(guarded, _task, {"topic": "t"}), [], way=way) == []


def test_classic_session_facts(spark):
    assert not is_connect(spark)
    assert task_slots(spark) == spark.sparkContext.defaultParallelism
