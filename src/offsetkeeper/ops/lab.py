"""The delivery lab (`lab delivery`): measure a commit policy's guarantee by crashing consumers."""

from offsetkeeper.consumer.lab import LabConfig, run_delivery_lab
from offsetkeeper.consumer.lab_child import LAB_POLICIES

__all__ = ["LAB_POLICIES", "LabConfig", "run_delivery_lab"]
