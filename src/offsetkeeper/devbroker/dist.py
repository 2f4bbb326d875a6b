"""The Apache Kafka release offsetkeeper runs locally: where its jars are and how to run them.

`scripts/setup.sh` fetches the release with Maven from `jvm/kafka-dist/pom.xml` into a cache
outside the work tree (``~/.cache/offsetkeeper/kafka-<version>/libs``); nothing else downloads
it. ``OFFSETKEEPER_KAFKA_LIBS`` points at another directory of the same jars (for example the
``libs/`` of an unpacked Kafka release, which is how the suite was run against Kafka 3.9).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from platformdirs import user_cache_dir

from offsetkeeper.errors import OffsetkeeperError

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
        raise OffsetkeeperError("java not found: Apache Kafka needs Java 17 or newer on PATH "
                                "(or JAVA_HOME)")
    return found


def classpath() -> str:
    """A `java -cp` value for the release; one line naming the fix when it is not installed."""
    libs = libs_dir()
    if not any(libs.glob("kafka_2.13-*.jar")):
        raise OffsetkeeperError(
            f"Apache Kafka {KAFKA_VERSION} is not installed in {libs}; run scripts/setup.sh "
            f"(it fetches the release with Maven from jvm/kafka-dist/pom.xml)")
    return str(libs / "*")


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
