"""The names of the record's tables, in one place: the models' `Meta.db_table` and the
hand-written SQL (`facts/sql.py`, `extraction/sql.py`) both read them, so a rename cannot leave
a statement behind. Changing one is a migration."""

SUBJECT = "memory_subject"
MEMORY_FACT = "memory_fact"
FACT_EVENT = "memory_fact_event"
SETTINGS = "memory_settings"
RETENTION_RULE = "memory_retention_rule"
POLICY_EVENT = "memory_policy_event"
RETENTION_RUN = "memory_retention_run"
