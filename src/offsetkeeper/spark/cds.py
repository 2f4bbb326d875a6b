"""A class-data-sharing (AppCDS) archive of Spark's JVM classes, so local sessions start faster.

A Spark driver JVM loads and verifies ~10,000 classes from ~250 jars at every start: half the
CPU of a local session start here (bench/README.md, issue 14: session start 8.6–10 s → 4.4–4.8 s
with the archive, load ~10). Java 17 can dump the classes a JVM loaded into an archive when it
exits (``-XX:ArchiveClassesAtExit``) and map them at the next start (``-XX:SharedArchiveFile``).

How offsetkeeper uses it, for local masters only (`java_options`):
- the archive lives in the user cache directory (``spark-cds/spark-KEY.jsa``, ~110 MB); KEY
  hashes the pyspark version, its jars (directory, names, sizes), the java binary and the JVM options, so
  a different Spark, Java or installation path never maps a stale archive (when a session dumps
  a new one, other installations' archives not in use are deleted: `class_archives.prune`);
- when there is none, one session (the one that takes the ``.dumping`` marker) runs with
  ``-XX:ArchiveClassesAtExit`` to a temporary name: its JVM writes the archive after the Python
  process has exited (seconds of CPU, once); the next session renames it into place. The JVM
  writes the archive's header last, so a file whose magic number is there is complete — a
  truncated archive would crash the JVM, which is why only such files are renamed;
- an archive the JVM finds unusable is ignored (``-Xshare:auto``); CDS log lines are off (the
  JVM would print them on the process's standard output).

``OFFSETKEEPER_SPARK_CDS=off`` turns it off; ``OFFSETKEEPER_SPARK_CDS=DIR`` puts the archive in
DIR. Options the user gives in ``spark.driver.extraJavaOptions`` that name an archive win.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from pathlib import Path

ENV = "OFFSETKEEPER_SPARK_CDS"
MAGIC = bytes.fromhex("a8ab0bf0")  # 0xf00baba8 little-endian: a complete dynamic archive
STALE_DUMP_SECONDS = 900
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def cache_dir() -> Path | None:
    """Where the archive lives; None when turned off."""
    v = os.environ.get(ENV, "").strip()
    if v.lower() in ("off", "0", "false", "no"):
        return None
    if v:
        return Path(v)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("offsetkeeper")) / "spark-cds"


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    exe = Path(home) / "bin" / "java" if home else None
    if exe is None or not exe.exists():
        found = shutil.which("java")
        exe = Path(found) if found else None
    return exe.resolve() if exe is not None else None


def archive_key(jvm_options: str) -> str | None:
    """A hash of what the archive depends on: pyspark, its jars, the java binary, the options."""
    import pyspark

    java = _java()
    if java is None:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    st = java.stat()
    # the archive records the class path: another installation of the same Spark (another
    # virtualenv) cannot map it, so its path is part of the key
    parts = [pyspark.__version__, str(jars.resolve()), str(java), st.st_size, int(st.st_mtime), jvm_options,
             sorted((p.name, p.stat().st_size) for p in jars.glob("*.jar")) if jars.is_dir() else []]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def _complete(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(4) == MAGIC
    except OSError:
        return False


def java_options(jvm_options: str, user: str) -> str:
    """The class-data-sharing options to add for a local session ('' when none apply)."""
    if any(x in user for x in ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare")):
        return ""
    try:
        d = cache_dir()
        key = archive_key(jvm_options) if d is not None else None
        if d is None or key is None or any(c.isspace() for c in str(d)):
            return ""  # Spark splits the options at white space
        final = d / f"spark-{key}.jsa"
        if not final.exists():
            for tmp in sorted(d.glob(f"spark-{key}.*.tmp")):
                if _complete(tmp):
                    os.replace(tmp, final)
                    break
        if _complete(final):
            from offsetkeeper.class_archives import touch_in_use

            touch_in_use(final)  # its last use: what pruning other installations' archives reads
            with contextlib.suppress(OSError):
                (d / f"spark-{key}.dumping").unlink()
            return f"-XX:SharedArchiveFile={final} -Xshare:auto {QUIET}"
        return _dump_options(d, key)
    except OSError:
        return ""


def _prune(d: Path, key: str) -> None:
    """A new archive is about to be dumped: delete other installations' archives not in use
    (class_archives.prune) and dumps whose JVM is gone: an unfinished `.tmp` stops growing when
    its JVM dies, a finished one of another installation is never renamed into place."""
    from offsetkeeper.class_archives import prune

    prune(d, archives="spark-*.jsa", unfinished=("spark-*.tmp", "spark-*.dumping"),
          keep=d / f"spark-{key}.jsa", stale_s=STALE_DUMP_SECONDS)


def _dump_options(d: Path, key: str) -> str:
    """Options that make this session's JVM write the archive as it exits, unless another
    session is doing it (a `.dumping` marker younger than STALE_DUMP_SECONDS)."""
    d.mkdir(parents=True, exist_ok=True)
    marker = d / f"spark-{key}.dumping"
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        if time.time() - marker.stat().st_mtime < STALE_DUMP_SECONDS:
            return ""
        marker.touch()  # a dump that never finished: take over
        for tmp in d.glob(f"spark-{key}.*.tmp"):
            with contextlib.suppress(OSError):
                tmp.unlink()
    else:
        os.close(fd)
    _prune(d, key)
    tmp = d / f"spark-{key}.{os.getpid()}-{int(time.time())}.tmp"
    return f"-XX:ArchiveClassesAtExit={tmp} {QUIET}"
