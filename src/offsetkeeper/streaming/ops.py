"""Kept for the dashboard's checkpoint page (web/checkpoints.py imports `streaming.ops`).

The operations on checkpoints are in `offsetkeeper.ops.streaming`; what is here are the two
readers of a checkpoint (streaming.view) under their old module name. Remove this module once
the dashboard imports `offsetkeeper.ops.streaming`.
"""

from offsetkeeper.streaming.view import checkpoint_positions, load_view

__all__ = ["checkpoint_positions", "load_view"]
