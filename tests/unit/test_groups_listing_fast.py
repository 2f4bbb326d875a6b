"""`groups list` asks Kafka's Java client only when librdkafka cannot tell (issue 32, goal 7):
the decision, and the listing wired to it (stub facade: the facts it stands for are checked on
Apache Kafka in tests/integration/test_groups_listing_fast.py)."""

from __future__ import annotations

import pytest

from offsetkeeper.groups.listing import GroupRow, list_typed_groups, needs_java
from offsetkeeper.models import GroupListing

CLASSIC = GroupListing("c", "empty", "classic", "")
CONSUMER = GroupListing("k", "stable", "consumer", "consumer")
ASSIGNING = GroupListing("a", "unknown", "consumer", "consumer")
UNTYPED = GroupListing("u", "empty", "", "consumer")


@pytest.mark.parametrize(("basic", "others", "expected"), [
    ([], set(), False),
    ([CLASSIC, CONSUMER], set(), False),
    ([CLASSIC], {"sg"}, True),                # a share/streams/Connect group exists
    ([CONSUMER, ASSIGNING], set(), True),     # a state librdkafka cannot name
    ([UNTYPED], set(), True),                 # a broker too old to say the type
])
def test_needs_java(basic, others, expected):
    assert needs_java(basic, others) is expected


class _Stub:
    """librdkafka's two listings as given; the Java listing only when allowed."""

    def __init__(self, basic, every, java=None):
        self.basic, self.every, self.java, self.java_calls = basic, every, java, 0

    def connect(self):
        pass

    def list_groups(self):
        return list(self.basic)

    def all_group_ids(self):
        return set(self.every)

    def list_all_groups(self):
        self.java_calls += 1
        if self.java is None:
            raise AssertionError("the Java client was asked though librdkafka could tell")
        return self.java


def test_listing_without_java_when_librdkafka_tells_everything():
    stub = _Stub([CONSUMER, CLASSIC], {"c", "k"})
    rows, note = list_typed_groups(stub)
    assert note is None and stub.java_calls == 0
    assert rows == [GroupRow("c", "empty", "classic", ""),
                    GroupRow("k", "stable", "consumer", "consumer")]
    assert list_typed_groups(stub, types={"share"}, strict=True) == ([], None)


def test_listing_asks_java_when_another_type_exists():
    from offsetkeeper.kafka.group_types import AnyGroupListing

    java = [AnyGroupListing("c", "Classic", "", "Empty"),
            AnyGroupListing("sg", "Share", "share", "Stable")]
    stub = _Stub([CLASSIC], {"c", "sg"}, java)
    rows, note = list_typed_groups(stub, types={"share"})
    assert stub.java_calls == 1 and note is None
    assert rows == [GroupRow("sg", "stable", "share", "share")]
