"""Files in local paths or fsspec URLs: join, open, list, and write atomically.

Every file offsetkeeper writes for a user to read back later (snapshots, manifests, restore
state, mappings, task reports, plans, scripts) is written through `write_bytes_atomic` (or
`replace` after streaming into a temporary name), so a reader — or a rerun after a crash — sees
either the old file or the whole new one, never half of one.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import Any

from offsetkeeper.errors import StoreError


def open_fs(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path within it) for a local path or URL."""
    from fsspec.core import url_to_fs

    return url_to_fs(str(url))


def absolute(url: str) -> str:
    """A local path made absolute (URLs stay as they are): Spark's tasks may run in another
    working directory than the command's (the warm Spark server's)."""
    url = str(url)
    if "://" in url or not url:
        return url
    return os.path.abspath(os.path.expanduser(url))


def local_path(url: str) -> str | None:
    """The path fsspec's local filesystem gives a plain local path (made absolute as
    `fsspec.implementations.local.make_path_posix` makes it, trailing '/' dropped), without
    importing fsspec (~20-40 ms of a command that only writes a local file, e.g. a reset's
    snapshot); None for URLs, chained, data:/file:/local: paths and on Windows (fsspec
    decides those)."""
    url = str(url)
    if os.sep != "/" or "://" in url or "::" in url or not url \
            or url.startswith(("data:", "file:", "local:")):
        return None
    if url.startswith("~"):
        url = os.path.expanduser(url)
    if not url.startswith("/"):
        url = f"{os.getcwd()}/{'' if url == '.' else url.removeprefix('./')}"
    return url.rstrip("/") or "/"


def is_local(fs: Any) -> bool:
    """True for fsspec's local filesystem (where os.replace gives an atomic rename)."""
    return type(fs).__name__ == "LocalFileSystem"


def join(base: str, *parts: str) -> str:
    """Join path or URL parts with '/' (no normalisation: callers validate names first)."""
    return "/".join([str(base).rstrip("/"), *parts])


def temp_name(path: str) -> str:
    """A hidden temporary name beside `path`, unique per writer."""
    parent, _, name = path.rpartition("/")
    return f"{parent}/.{name}.{uuid.uuid4().hex[:12]}.tmp" if parent else f".{name}.{uuid.uuid4().hex[:12]}.tmp"


def replace(fs: Any, tmp: str, final: str) -> None:
    """Move a finished temporary file over `final` (atomic on local disks)."""
    if is_local(fs):
        os.replace(tmp, final)
    else:
        fs.mv(tmp, final)


def write_bytes_atomic(url: str, data: bytes, *, fsync: bool = False, mode: int | None = None,
                       what: str = "file") -> str:
    """Write `data` to `url` via a temporary file and a rename; returns the path written.

    On failure the temporary file is removed and a StoreError names the file and the cause.
    """
    path = local_path(url)
    fs = None
    if path is None:
        fs, path = open_fs(url)
        if is_local(fs):
            fs = None  # a local file: written with os calls below, as a plain path is
    tmp = temp_name(path)
    try:
        parent = path.rpartition("/")[0]
        if parent and fs is not None:
            fs.makedirs(parent, exist_ok=True)
        elif parent:
            os.makedirs(parent, exist_ok=True)
        if fs is None:
            with open(tmp, "wb") as f:
                f.write(data)
                if fsync:
                    f.flush()
                    os.fsync(f.fileno())
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, path)
        else:
            fs.pipe_file(tmp, data)
            fs.mv(tmp, path)
    except OSError as exc:
        with contextlib.suppress(Exception):
            if fs is None:
                if os.path.lexists(tmp):
                    os.remove(tmp)
            elif fs.exists(tmp):
                fs.rm(tmp)
        raise StoreError(f"cannot write {what} {url}: {exc.strerror or exc}") from None
    return path


def write_text_atomic(url: str, text: str, **kw: Any) -> str:
    """`write_bytes_atomic` for UTF-8 text."""
    return write_bytes_atomic(url, text.encode("utf-8"), **kw)


def read_regular_file(fs, path: str, *, local: bool, limit: int, what: str) -> bytes:
    """The bytes of `path` when it is a regular file of at most `limit` bytes; StoreError
    otherwise (FileNotFoundError when missing). Locally the file is opened without following
    a symlink and without blocking (a FIFO answers at once), and the size is taken from the
    open file, so what is checked is what is read. Store files are written by offsetkeeper:
    anything else in their place is reported, never read."""
    if local:
        import errno
        import stat

        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise StoreError(f"{what} is a symbolic link or not a file; store files must "
                                 "be regular files inside the store") from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise StoreError(f"{what} is not a regular file (a FIFO, device or directory "
                                 "is never read)")
            if st.st_size > limit:
                raise StoreError(f"{what} is {st.st_size} bytes; larger than the "
                                 f"{limit // (1024 * 1024)} MiB a store file may be")
            os.set_blocking(fd, True)
            with os.fdopen(fd, "rb") as f:
                fd = -1
                data = f.read(limit + 1)
        finally:
            if fd >= 0:
                os.close(fd)
        if len(data) > limit:
            raise StoreError(f"{what} grew past {limit // (1024 * 1024)} MiB while read")
        return data
    info = fs.info(path)
    if info.get("type") not in ("file", None):
        raise StoreError(f"{what} is not a file")
    size = info.get("size")
    if isinstance(size, int) and size > limit:
        raise StoreError(f"{what} is {size} bytes; larger than the "
                         f"{limit // (1024 * 1024)} MiB a store file may be")
    with fs.open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise StoreError(f"{what} is larger than the {limit // (1024 * 1024)} MiB a store file may be")
    return data
