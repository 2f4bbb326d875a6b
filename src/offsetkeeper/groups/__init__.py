"""Groups of every Kafka 4 type: listing with type and protocol (KIP-1043), consumer groups'
KIP-848 states and KIP-1099 epochs, share groups (KIP-932) and streams groups (KIP-1071).

The calls confluent-kafka lacks go through the admin facade's Java part (kafka/jvm.py):
these functions need Java and the admin helper; `groups list` falls back to librdkafka.
"""

from offsetkeeper.groups.consumer import consumer_group_details
from offsetkeeper.groups.listing import GroupRow, list_typed_groups
from offsetkeeper.groups.share import ShareGroupView, ShareOffsetRow, describe_share_groups
from offsetkeeper.groups.streams import describe_streams_groups, list_streams_groups

__all__ = [
    "GroupRow", "ShareGroupView", "ShareOffsetRow", "consumer_group_details",
    "describe_share_groups", "describe_streams_groups", "list_streams_groups",
    "list_typed_groups",
]
