"""Issue 31, ready to distribute: the history's primary key holds the traveller,
(id, created_at, subject_id), as Citus needs the distribution column in every unique constraint
of a table distributed on it (docs/ARCHITECTURE.md, "Distributing by traveller"). Declared on
the partitioned parent, so every month's partition, present and future, gets it. Django still
treats `id` as the primary key (ids come from one identity sequence)."""

from django.db import migrations

FORWARDS = """
ALTER TABLE memory_fact_event DROP CONSTRAINT memory_fact_event_pkey;
ALTER TABLE memory_fact_event ADD CONSTRAINT memory_fact_event_pkey
    PRIMARY KEY (id, created_at, subject_id);
"""

BACKWARDS = """
ALTER TABLE memory_fact_event DROP CONSTRAINT memory_fact_event_pkey;
ALTER TABLE memory_fact_event ADD CONSTRAINT memory_fact_event_pkey PRIMARY KEY (id, created_at);
"""


class Migration(migrations.Migration):
    dependencies = [("facts", "0013_quality_marked_event")]

    operations = [migrations.RunSQL(FORWARDS, BACKWARDS)]
