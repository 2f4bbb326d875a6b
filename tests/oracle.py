"""Apache Kafka's own `kafka-consumer-groups` as the oracle for offsetkeeper's tests.

Two ways to run the tool of the release the dev broker runs (`offsetkeeper.devbroker.dist`):

- `run_tool(bootstrap, *args)`: one fresh JVM per call, exactly the argv of
  `dist.tool_command("kafka-consumer-groups", ...)` (what `bin/kafka-consumer-groups.sh` runs).
- `ToolRunner`: one JVM that runs the same main class (`ConsumerGroupCommand.main`) once per
  call, for the property tests that compare hundreds of commands (a JVM start costs ~1.5 s).
  `Exit.exit` (the tool's only way out besides returning) is turned into an exception whose
  exit code is kept; what the tool printed after that point is dropped, as a real exit would
  have. `test_oracle_reset.py` checks that both give the same answer.

`tool_bin(dir)` writes a `kafka-consumer-groups.sh` wrapper for shell scripts (`--script`), and
the parsers read the tool's `--export` CSV and `--describe` table.
"""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from offsetkeeper.devbroker import dist

TOOL = "kafka-consumer-groups"


@dataclass
class ToolResult:
    code: int
    out: str
    err: str

    def text(self) -> str:
        return f"exit {self.code}\nstdout:\n{self.out}\nstderr:\n{self.err}"


def run_tool(bootstrap: str, *args: str, timeout: float = 120) -> ToolResult:
    """kafka-consumer-groups in a JVM of its own (the real command line)."""
    r = subprocess.run(dist.tool_command(TOOL, "--bootstrap-server", bootstrap, *map(str, args)),
                       capture_output=True, text=True, timeout=timeout)
    return ToolResult(r.returncode, r.stdout, r.stderr)


def tool_bin(directory: Path) -> Path:
    """A directory holding an executable `kafka-consumer-groups.sh` (put it first on PATH)."""
    import shlex

    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "kafka-consumer-groups.sh"
    script.write_text("#!/bin/sh\nexec " + shlex.join(dist.tool_command(TOOL)) + ' "$@"\n')
    script.chmod(0o755)
    return directory


_RUNNER = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import EXIT_CLASS;

public class OracleRunner {
    static final class Exited extends Error {
        Exited() { super("exit", null, false, false); }
    }
    static Integer code;
    static int outCut, errCut;
    static ByteArrayOutputStream out, err;

    public static void main(String[] a) throws Exception {
        PrintStream origErr = System.err;
        Exit.Procedure exit = (status, message) -> {
            if (code == null) {
                code = status;
                System.out.flush();
                System.err.flush();
                outCut = out.size();
                errCut = err.size();
            }
            throw new Exited();
        };
        Exit.setExitProcedure(exit);
        Exit.setHaltProcedure(exit);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t", -1);
            out = new ByteArrayOutputStream();
            err = new ByteArrayOutputStream();
            code = null;
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            String[] args = java.util.Arrays.copyOfRange(parts, 2, parts.length);
            try {
                org.apache.kafka.tools.consumer.group.ConsumerGroupCommand.main(args);
            } catch (Exited e) {
                // the tool called Exit.exit: code and output cut are kept
            } catch (Throwable t) {
                t.printStackTrace();
                if (code == null) code = 1;
            }
            System.out.flush();
            System.err.flush();
            byte[] o = out.toByteArray(), e = err.toByteArray();
            int rc = code == null ? 0 : code;
            if (code != null) {
                o = java.util.Arrays.copyOf(o, outCut);
                e = java.util.Arrays.copyOf(e, errCut);
            }
            Files.write(Paths.get(parts[0]), o);
            Files.write(Paths.get(parts[1]), e);
            origErr.println("\u0001ORACLE-DONE " + rc);
            origErr.flush();
        }
    }
}
"""


def _exit_class() -> str:
    """Kafka's Exit hook class in the release's clients jar: it moved to
    `org.apache.kafka.common.utils.internals` in 4.4 (kafka-tools-api still ships the old one,
    which the tools no longer call)."""
    import zipfile

    for jar in sorted(dist.libs_dir().glob("kafka-clients-*.jar")):
        if "org/apache/kafka/common/utils/internals/Exit.class" in zipfile.ZipFile(jar).namelist():
            return "org.apache.kafka.common.utils.internals.Exit"
    return "org.apache.kafka.common.utils.Exit"


class ToolRunner:
    """kafka-consumer-groups' main class run again and again in one JVM (see the module doc)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.dir = Path(tempfile.mkdtemp(prefix="oracle-runner-"))
        src = self.dir / "OracleRunner.java"
        src.write_text(_RUNNER.replace("EXIT_CLASS", _exit_class()))
        argv = dist.tool_command(TOOL)
        main_at = argv.index(dist.TOOLS[TOOL])
        # same JVM options and classpath as the tool; the runner's source instead of its class
        self.proc = subprocess.Popen([*argv[:main_at], str(src)], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, encoding="utf-8", cwd=self.dir)
        self.calls = 0
        self._lock = threading.Lock()
        self._noise: list[str] = []

    def run(self, *args: str, timeout: float = 120) -> ToolResult:
        line = [str(a) for a in ("--bootstrap-server", self.bootstrap, *args)]
        if any("\t" in a or "\n" in a for a in line):
            raise ValueError("the runner passes arguments tab-separated on one line")
        with self._lock:
            self.calls += 1
            out, err = self.dir / f"{self.calls}.out", self.dir / f"{self.calls}.err"
            self.proc.stdin.write("\t".join([str(out), str(err), *line]) + "\n")
            self.proc.stdin.flush()
            timer = threading.Timer(timeout, self.proc.kill)
            timer.start()
            try:
                while True:
                    got = self.proc.stderr.readline()
                    if not got:
                        raise RuntimeError("the oracle runner JVM ended: " + "".join(self._noise[-20:]))
                    if got.startswith("\x01ORACLE-DONE "):
                        code = int(got.split()[1])
                        break
                    self._noise.append(got)
            finally:
                timer.cancel()
            res = ToolResult(code, out.read_text("utf-8"), err.read_text("utf-8"))
            out.unlink()
            err.unlink()
            return res

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for f in self.dir.iterdir():
            f.unlink()
        os.rmdir(self.dir)


# -- parsing the tool's output ---------------------------------------------------------------

def parse_export(text: str, group: str | None = None) -> dict[tuple[str, str, int], int]:
    """(group, topic, partition) -> offset from `--reset-offsets --export` output.

    The tool writes `topic,partition,offset` when given exactly one --group (pass it as
    `group`), else `group,topic,partition,offset`, as CSV (Jackson quotes every name longer
    than 24 characters); its warnings ("Warn: Partition 2 from topic t is empty ...", log
    lines) share stdout and are skipped: a record counts only with the expected number of
    fields and ASCII digits in the last two.
    """
    width = 3 if group is not None else 4
    rows: dict[tuple[str, str, int], int] = {}
    # the whole text through one CSV reader: a quoted name may hold a newline (other tests on
    # the shared cluster create such groups, and --all-groups meets them)
    try:
        records = list(csv.reader(io.StringIO(text)))
    except csv.Error:
        records = [next(csv.reader([line]), []) for line in text.splitlines()]
    for fields in records:
        if len(fields) != width or not all(re.fullmatch(r"[0-9]+", f) for f in fields[-2:]):
            continue
        names = ([group] if group is not None else []) + fields[:-2]
        key = (names[0], names[1], int(fields[-2]))
        assert key not in rows, f"the tool exported {key} twice"
        rows[key] = int(fields[-1])
    return rows


@dataclass(frozen=True)
class DescribeRow:
    current: int | None
    log_end: int | None
    lag: int | None


def parse_describe(text: str) -> dict[tuple[str, str, int], DescribeRow]:
    """(group, topic, partition) -> CURRENT-OFFSET, LOG-END-OFFSET, LAG of `--describe`."""
    rows: dict[tuple[str, str, int], DescribeRow] = {}
    header: list[str] | None = None

    def num(v: str) -> int | None:
        return None if v == "-" else int(v)

    for line in text.splitlines():
        cells = line.split()
        if not cells:
            continue
        if cells[0] == "GROUP":
            header = cells
            continue
        if header is None or len(cells) != len(header):
            continue
        row = dict(zip(header, cells, strict=True))
        if row["TOPIC"] == "-":
            continue
        key = (row["GROUP"], row["TOPIC"], int(row["PARTITION"]))
        rows[key] = DescribeRow(num(row["CURRENT-OFFSET"]), num(row["LOG-END-OFFSET"]),
                                num(row["LAG"]))
    return rows
