"""Restore a backup to a cluster with an exact source -> target offset mapping.

Public surface:
    run_restore(RestoreOptions) -> RestoreResult          restore/run.py   (Spark)
    offsets_from_mapping(...) -> FromOffsets               restore/translate.py
    mapping_summary / lookup_offset                        restore/mapping.py
    validate_restore(...) -> ValidationReport              restore/validate.py
    run_three_phase(ThreePhaseOptions) -> ThreePhaseReport restore/three_phase.py
"""
