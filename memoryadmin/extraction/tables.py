"""The name of extraction's table, read by `ExtractionJob.Meta.db_table` and by the statements
of `extraction/sql.py`. Changing it is a migration."""

EXTRACTION_JOB = "extraction_job"
