"""Build hook: the JVM parts offsetkeeper runs go inside the wheel as package data.

`python -m build` (and `pip install .`) runs Maven on jvm/admin-helper/pom.xml and puts the
admin helper and the jars it needs at run time in ``offsetkeeper/_jvm/`` of the wheel:

    offsetkeeper/_jvm/admin-helper.jar
    offsetkeeper/_jvm/lib/*.jar            kafka-clients, slf4j
    offsetkeeper/_jvm/kafka-dist/pom.xml   what `dev-broker` fetches on first use

The record compression codecs (the Admin client reads no record batches) stay out: they would
double the wheel. An editable install builds
nothing here (scripts/setup.sh builds the developer's cache). Everything else is pyproject.toml.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
#: jar name prefixes of the helper's runtime dependencies that the wheel ships
SHIPPED = ("kafka-clients-", "slf4j-")


class BuildPyWithJvm(build_py):
    """build_py, then the admin helper built by Maven into the build's package directory."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib) / "offsetkeeper" / "_jvm"
        build_jvm(dest)


def build_jvm(dest: Path) -> None:
    """Maven-build jvm/admin-helper into `dest` (admin-helper.jar, lib/) and copy the Kafka
    release's pom next to it."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SystemExit("building offsetkeeper needs Maven (mvn) and a JDK 17+ to build its JVM "
                         "admin helper: apt-get install maven openjdk-17-jdk-headless")
    pom = ROOT / "jvm" / "admin-helper" / "pom.xml"
    with tempfile.TemporaryDirectory(prefix="offsetkeeper-jvm-") as tmp:
        out = Path(tmp)
        subprocess.run([mvn, "-q", "-B", "-f", str(pom), "package",
                        "dependency:copy-dependencies", "-DskipTests",
                        f"-Dhelper.build.dir={out / 'build'}", f"-DoutputDirectory={out / 'lib'}"],
                       check=True)
        if dest.exists():
            shutil.rmtree(dest)
        (dest / "lib").mkdir(parents=True)
        shutil.copy2(out / "build" / "admin-helper.jar", dest / "admin-helper.jar")
        for jar in sorted((out / "lib").glob("*.jar")):
            if jar.name.startswith(SHIPPED):
                shutil.copy2(jar, dest / "lib" / jar.name)
    (dest / "kafka-dist").mkdir()
    shutil.copy2(ROOT / "jvm" / "kafka-dist" / "pom.xml", dest / "kafka-dist" / "pom.xml")


if os.environ.get("OFFSETKEEPER_SKIP_JVM_BUILD") == "1":
    setup()
else:
    setup(cmdclass={"build_py": BuildPyWithJvm})
