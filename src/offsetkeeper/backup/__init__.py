"""Topic backup on Spark: planning, the run, the manifest, checksums and validation.

Public surface (kept stable for restore and the demo):

- `offsetkeeper.backup.config.BackupConfig` and `load_backup_config`
- `offsetkeeper.backup.run.run_backup(config, *, spark=None, progress=None) -> BackupResult`
  (progress: `offsetkeeper.progress.ProgressEvent`s, unit partitions)
- `offsetkeeper.backup.read`: pyarrow reading of backup files checked against the manifest
  (`read_records`, `check_segments`, `Selection`, `selection_stats`)
- Spark task failures travel as typed values (`offsetkeeper.spark.task_failure`: `guarded`,
  `raise_failures`; restore's tasks use them too)
- `offsetkeeper.backup.manifest.Manifest`, `load_manifest`, `save_manifest`, `list_backups`,
  `read_backup_records`
- `offsetkeeper.backup.checksum.record_checksums(df)`
- `offsetkeeper.backup.validate.validate_backup(destination, backup_id, deep=False)`

The on-disk format is described in docs/design.md ("Backup format (version 1)").
"""
