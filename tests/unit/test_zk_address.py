"""ZooKeeper connect strings are validated before anything connects."""

import pytest

from offsetkeeper.errors import UsageError
from offsetkeeper.zk.offsets import parse_address


@pytest.mark.parametrize("text", ["zk1:2181", "zk1:2181,zk2:2181/kafka", "127.0.0.1:2181/a/b", "[::1]:2181"])
def test_valid(text):
    assert parse_address(text) == text


@pytest.mark.parametrize("text", ["", "zk1", "zk1:port", "zk1:2181/", "zk1:2181//x", "zk1:2181 /x", "zk1:2181,"])
def test_invalid(text):
    with pytest.raises(UsageError):
        parse_address(text)
