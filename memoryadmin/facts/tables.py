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

# Each partition of the history keeps free room on its pages, so erasing (which rewrites
# no indexed column) is a HOT update (migrations 0007, 0011).
FACT_EVENT_STORAGE = "fillfactor = 70"
