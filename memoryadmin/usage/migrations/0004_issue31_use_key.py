"""Issue 31, ready to distribute: the use receipts' primary key holds the traveller,
(id, used_at, subject_id), as Citus needs the distribution column in every unique constraint
of a table distributed on it (docs/ARCHITECTURE.md, "Distributing by traveller"). Declared on
the partitioned parent, so every month's partition gets it; Django still sees `id` as the key."""

from django.db import migrations

FORWARDS = """
ALTER TABLE memory_use DROP CONSTRAINT memory_use_pkey;
ALTER TABLE memory_use ADD CONSTRAINT memory_use_pkey PRIMARY KEY (id, used_at, subject_id);
"""

BACKWARDS = """
ALTER TABLE memory_use DROP CONSTRAINT memory_use_pkey;
ALTER TABLE memory_use ADD CONSTRAINT memory_use_pkey PRIMARY KEY (id, used_at);
"""


class Migration(migrations.Migration):
    dependencies = [("usage", "0003_issue33_use_version")]

    operations = [migrations.RunSQL(FORWARDS, BACKWARDS)]
