"""MirrorMaker 2's view of consumer groups: checkpoints and offset syncs read directly.

    records  decode Checkpoint / OffsetSync records (connect-mirror's own binary format),
             validated as hostile input; read_checkpoints / read_offset_syncs
    target   the `--from-mm2` reset target: each group's translated offsets on the target
"""
