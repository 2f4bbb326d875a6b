"""The Apache Kafka release offsetkeeper runs locally: where its jars are and how to run them.

The release lives in a user cache (``~/.cache/offsetkeeper/kafka-<version>/libs``). It is
fetched with Maven from the project's pom, ``jvm/kafka-dist/pom.xml`` (shipped in the wheel as
``offsetkeeper/_jvm/kafka-dist/pom.xml``): by `scripts/setup.sh` in a source checkout, and by
`ensure_release()` the first time `dev-broker` needs it after a pip install (with progress on
stderr; Maven keeps its own repository in ~/.m2). ``OFFSETKEEPER_KAFKA_LIBS`` points at another
directory of the same jars (for example the ``libs/`` of an unpacked Kafka release, which is how
the suite was run against Kafka 3.9); such a directory is never fetched into.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from platformdirs import user_cache_dir

from offsetkeeper.errors import OffsetkeeperError, UsageError

KAFKA_VERSION = "4.4.0"
LIBS_ENV = "OFFSETKEEPER_KAFKA_LIBS"

#: Main classes of the release's command-line tools (bin/kafka-*.sh run these).
TOOLS = {
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-server": "kafka.Kafka",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",  # kafka.admin.ConfigCommand until 4.3
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
}


def libs_dir() -> Path:
    """Directory holding the Kafka release's jars (the broker, the tools, their dependencies)."""
    given = os.environ.get(LIBS_ENV)
    if given:
        return Path(given).expanduser()
    return Path(user_cache_dir("offsetkeeper")) / f"kafka-{KAFKA_VERSION}" / "libs"


def java_executable() -> str:
    """The `java` to run Kafka with: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise UsageError("java not found: Apache Kafka needs Java 17 or newer on PATH (or "
                         "JAVA_HOME); on Debian/Ubuntu: apt-get install openjdk-17-jre-headless")
    return found


def _installed(libs: Path) -> bool:
    return any(libs.glob("kafka_2.13-*.jar"))


def release_pom() -> Path | None:
    """The pom that pins the release: shipped in the wheel, else the source checkout's."""
    here = Path(__file__).resolve()
    for pom in (here.parents[1] / "_jvm" / "kafka-dist" / "pom.xml",
                here.parents[3] / "jvm" / "kafka-dist" / "pom.xml"):
        if pom.is_file():
            return pom
    return None


_DOWNLOADED = re.compile(r"Downloaded from [^:]+: \S+/(\S+\.jar) \(([^)]*)\)")


def ensure_release(out=None) -> Path:
    """The release's libs directory, fetched with Maven first when it is not there yet.

    Progress goes to `out` (stderr): one line per jar downloaded or copied. A missing `java` or
    `mvn` is one line naming it and how to get it (UsageError, exit 2); a failed Maven run is
    an OffsetkeeperError with its last lines. The directory appears whole or not at all.
    """
    libs = libs_dir()
    if _installed(libs):
        return libs
    if os.environ.get(LIBS_ENV):
        raise OffsetkeeperError(f"Apache Kafka is not installed in {libs} (${LIBS_ENV}); "
                                "point it at a directory holding the release's jars")
    java_executable()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise UsageError(f"dev-broker fetches Apache Kafka {KAFKA_VERSION} with Maven on first "
                         "use and mvn is not on PATH; install Maven (Debian/Ubuntu: apt-get "
                         "install maven) and run again")
    pom = release_pom()
    if pom is None:
        raise OffsetkeeperError("jvm/kafka-dist/pom.xml is missing from this installation; "
                                "reinstall offsetkeeper")
    out = out or sys.stderr
    tmp = libs.with_name(f"{libs.name}.tmp.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    print(f"dev-broker: fetching Apache Kafka {KAFKA_VERSION} with Maven into {libs} "
          "(first use; about 55 MB)", file=out, flush=True)
    tail: list[str] = []
    done = threading.Event()

    def count_jars() -> None:  # copy-dependencies logs nothing per jar: watch them arrive
        seen = 0
        while not done.wait(2.0):
            jars = list(tmp.glob("*.jar"))
            if len(jars) != seen:
                seen = len(jars)
                mb = sum(j.stat().st_size for j in jars if j.exists()) / 1e6
                print(f"  {seen} jars, {mb:.0f} MB", file=out, flush=True)

    watcher = threading.Thread(target=count_jars, daemon=True)
    watcher.start()
    try:
        proc = subprocess.Popen(
            [mvn, "-B", "-f", str(pom), "dependency:copy-dependencies",
             f"-DoutputDirectory={tmp}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            text=True, errors="replace")
        assert proc.stdout is not None
        for line in proc.stdout:
            tail = [*tail[-19:], line.rstrip()]
            if m := _DOWNLOADED.search(line):
                print(f"  downloaded {m.group(1)} ({m.group(2)})", file=out, flush=True)
        if proc.wait() != 0 or not _installed(tmp):
            raise OffsetkeeperError(
                f"Maven could not fetch Apache Kafka {KAFKA_VERSION} (mvn -f {pom}): "
                + " | ".join(x for x in tail if "ERROR" in x)[-400:])
        (tmp / ".complete").write_text(f"fetched by offsetkeeper from {pom}\n")
        shutil.rmtree(libs, ignore_errors=True)
        tmp.rename(libs)
    finally:
        done.set()
        shutil.rmtree(tmp, ignore_errors=True)
    n = len(list(libs.glob("*.jar")))
    print(f"dev-broker: Apache Kafka {KAFKA_VERSION} ready ({n} jars)", file=out, flush=True)
    return libs


def classpath() -> str:
    """A `java -cp` value for the release, fetched on first use (`ensure_release`)."""
    return str(ensure_release() / "*")


def tool_command(tool: str, *args: str, heap: str = "256m") -> list[str]:
    """argv that runs one of the release's tools (a key of `TOOLS`) as its bin/ script would."""
    try:
        main = TOOLS[tool]
    except KeyError:
        raise OffsetkeeperError(f"unknown Kafka tool {tool!r} (expected one of "
                                f"{', '.join(sorted(TOOLS))})") from None
    return [java_executable(), f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dlog4j2.level=WARN", "-cp", classpath(), main, *args]


def run_kafka_tool(tool: str, args: list[str]) -> int:
    """Run a tool of the release in the foreground (output to this process's); its exit code."""
    import subprocess

    if tool not in TOOLS or tool in ("kafka-server", "kafka-storage"):
        from offsetkeeper.errors import UsageError

        choices = ", ".join(t for t in TOOLS if t not in ("kafka-server", "kafka-storage"))
        raise UsageError(f"unknown Kafka tool {tool!r} (expected one of {choices})")
    # only the console producer reads stdin (records to send); the others must never wait on it
    stdin = None if tool == "kafka-console-producer" else subprocess.DEVNULL
    return subprocess.call(tool_command(tool, *args), stdin=stdin)
