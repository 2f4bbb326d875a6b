"""Which compression a restore writes with (issue 32, goal 2): the flag or config key, else the
source topics' compression.type from the backup, else zstd; bad names are bad input."""

from __future__ import annotations

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.errors import UsageError
from offsetkeeper.restore.config import (
    RestoreOptions,
    RestoreRequest,
    build_restore_options,
    parse_compression,
    restore_compression,
)

OPTS = RestoreOptions("/b", "id", Connection("127.0.0.1:9092"))


@pytest.mark.parametrize(("given", "configs", "expected"), [
    (None, {}, "zstd"),
    (None, {"a": {}}, "zstd"),
    (None, {"a": {"compression.type": "producer"}}, "zstd"),   # left to the source's producers
    (None, {"a": {"compression.type": "lz4"}}, "lz4"),
    (None, {"a": {"compression.type": "uncompressed"}}, "none"),
    (None, {"a": {"compression.type": "gzip"}, "b": {"compression.type": "gzip"}}, "gzip"),
    (None, {"a": {"compression.type": "gzip"}, "b": {"compression.type": "lz4"}}, "zstd"),
    (None, {"a": {"compression.type": "gzip"}, "b": {}}, "zstd"),
    ("none", {"a": {"compression.type": "lz4"}}, "none"),      # the user's choice wins
    ("snappy", {}, "snappy"),
])
def test_restore_compression(given, configs, expected):
    assert restore_compression(OPTS.with_(compression=given), configs) == expected


@pytest.mark.parametrize(("text", "expected"), [
    (None, None), ("zstd", "zstd"), (" LZ4 ", "lz4"), ("none", "none"), ("gzip", "gzip"),
])
def test_parse_compression(text, expected):
    assert parse_compression(text, flag="--compression") == expected


def test_a_bad_compression_is_bad_input_naming_it(tmp_path):
    with pytest.raises(UsageError) as exc:
        parse_compression("brotli", flag="--compression")
    assert exc.value.message == ("--compression 'brotli' is not a compression (expected none, "
                                 "gzip, snappy, lz4, zstd)")
    f = tmp_path / "restore.yaml"
    f.write_text("backup: {path: /b, id: x1}\nrestore: {compression: lzma}\n")
    (tmp_path / "config.yaml").write_text("{}\n")
    with pytest.raises(UsageError) as exc:
        build_restore_options(RestoreRequest(file=str(f), bootstrap_server="127.0.0.1:9092",
                                             config=str(tmp_path / "config.yaml")))
    assert "compression 'lzma' is not a compression" in exc.value.message


def test_flag_and_file_key(tmp_path):
    f = tmp_path / "restore.yaml"
    f.write_text("backup: {path: /b, id: x1}\nrestore: {compression: lz4}\n")
    (tmp_path / "config.yaml").write_text("{}\n")
    cfg = str(tmp_path / "config.yaml")
    from_file = build_restore_options(RestoreRequest(file=str(f), bootstrap_server="h:1", config=cfg))
    assert from_file.compression == "lz4"
    flag = build_restore_options(RestoreRequest(file=str(f), bootstrap_server="h:1", config=cfg,
                                                compression="none"))
    assert flag.compression == "none"
