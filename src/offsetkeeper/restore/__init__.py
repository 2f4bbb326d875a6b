"""Restore a backup to a cluster with an exact source -> target offset mapping.

Public surface (the CLI and the dashboard call offsetkeeper.ops.restore, which merges requests
into these):
    run_restore(RestoreOptions, progress=) -> RestoreResult        restore/run.py   (Spark; dry run: pyarrow)
    build_restore_options(RestoreRequest) -> RestoreOptions        restore/config.py
    offsets_from_mapping(...) -> FromOffsets                       restore/translate.py
    translate_groups(...) -> (RestoreState, [TranslatedOffset])    restore/translate.py
    partition_mappings / summary_rows / lookup_row                 restore/mapping.py
    validate_restore(...) -> ValidationReport                      restore/validate.py
    build_three_phase_options(ThreePhaseRequest) -> ThreePhaseOptions
    run_three_phase(ThreePhaseOptions, progress=) -> ThreePhaseReport  restore/three_phase.py
    list_states / resolve_restore / RestoreStatus                  restore/state.py
"""
