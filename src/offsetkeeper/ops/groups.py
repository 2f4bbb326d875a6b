"""Reading groups of every type, for the commands that show them (`groups`, `offsets show`,
`share-groups`, `streams-groups`): the describe readers and the typed listing, as one facade."""

from offsetkeeper.describe import (
    describe_offsets,
    describe_states,
    resolve_group_ids,
    rows_as_dicts,
    show_offsets,
)
from offsetkeeper.groups import (
    consumer_group_details,
    describe_share_groups,
    describe_streams_groups,
    list_streams_groups,
    list_typed_groups,
)
from offsetkeeper.groups.listing import GROUP_TYPES
from offsetkeeper.kafka.jvm import helper_command

__all__ = ["GROUP_TYPES", "consumer_group_details", "describe_offsets", "describe_share_groups",
           "describe_states", "describe_streams_groups", "helper_command", "list_streams_groups",
           "list_typed_groups", "resolve_group_ids", "rows_as_dicts", "show_offsets"]
