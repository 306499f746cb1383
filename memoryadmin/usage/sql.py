"""Every hand-written statement of `usage`, one named constant each (pasteable into psql,
placeholders aside). `tests/facts/test_sql.py` runs EXPLAIN on each."""

from __future__ import annotations

from memoryadmin.extraction.tables import EXTRACTION_JOB
from memoryadmin.facts.tables import MEMORY_FACT, SUBJECT

from .tables import MEMORY_USE

# The facts a batch of receipts names (unknown keys are ignored) with their current versions
# (the version of a receipt whose host named none), found through the fact's
# unique index; share-locked so a concurrent erasure waits for the batch and then takes it too.
SQL_FACT_IDS = f"""
SELECT key, id, version FROM {MEMORY_FACT}
WHERE subject_id = %(subject)s AND key = ANY(%(keys)s)
FOR KEY SHARE
"""

# The batch itself, as COPY text (services.uses_record builds the rows): only the keyed hash
# and the fact's row id are stored, never the key. Not a plannable statement (no EXPLAIN).
SQL_COPY_USES = f"""COPY {MEMORY_USE}
(subject_id, session_tag, turn_id, used_at, key_hash, fact_id, version, version_assumed, how)
FROM STDIN"""

# Take the receipts that rode with posted turns off their jobs (one job, or a chunk of any):
# emptied and returned in one statement, rows a concurrent taker holds are skipped.
SQL_TAKE_JOB_USES = f"""
WITH taken AS (
  SELECT id, subject_id, session_tag, turn_id, used FROM {EXTRACTION_JOB}
  WHERE used IS NOT NULL AND (%(job)s::bigint IS NULL OR id = %(job)s::bigint)
  ORDER BY id LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)
UPDATE {EXTRACTION_JOB} AS j SET used = NULL
FROM taken AS t WHERE j.id = t.id
RETURNING t.subject_id, t.session_tag, t.turn_id, t.used
"""

# The receipts that outlive their retention, as a condition on a receipt `t`: those of a
# traveller under legal hold. One rule for the hourly row sweep (below) and the drop by month
# (`facts.partitions.month_drop`, which finds them through `memory_subject_held` and the
# month's (subject_id, session_tag, turn_id) index).
USES_KEPT_PAST_RETENTION = f"""t.subject_id IN (SELECT subject_id FROM {SUBJECT}
                 WHERE legal_hold)"""

# Receipts past their retention, a chunk at a time (the sweep re-runs until none is left). The
# ids are taken first (one array), so the DELETE finds each through the primary key of the old
# months only.
SQL_SWEEP_USES = f"""
DELETE FROM {MEMORY_USE}
WHERE used_at < %(cutoff)s
  AND id = ANY (ARRAY(SELECT t.id FROM {MEMORY_USE} AS t
                      WHERE t.used_at < %(cutoff)s AND NOT ({USES_KEPT_PAST_RETENTION})
                      ORDER BY t.used_at LIMIT %(limit)s))
"""

# The erasers' parts of the erasing statements (facts/sql.py): a fact's receipts stay as
# tombstones, marked erased (found through the hashes of the facts that went, `erased_facts`):
# they hold no value, key or quote, and the turn they belong to can then say a fact it used was
# erased instead of claiming it was never reported. On "forget everything" every receipt of
# the traveller goes, turn ids with them (`erased_subjects`).
USAGE_ERASE_FACTS_SQL = f"""UPDATE {MEMORY_USE} AS u SET erased_at = now()
FROM erased_facts AS e
WHERE u.subject_id = e.subject_id AND u.key_hash = e.key_hash AND u.erased_at IS NULL"""

USAGE_ERASE_SUBJECTS_SQL = f"""DELETE FROM {MEMORY_USE}
WHERE subject_id IN (SELECT subject_id FROM erased_subjects)"""

# Receipts still riding on posted turns' jobs (`extraction_job.used`) name keys: when a fact of
# a traveller goes, that traveller's waiting ones go too (they would be recorded within
# seconds; losing them is the price of never keeping an erased key). "Forget everything" wipes
# them with the transcripts (extraction's eraser).
USAGE_ERASE_WAITING_SQL = f"""UPDATE {EXTRACTION_JOB} SET used = NULL
WHERE used IS NOT NULL AND subject_id IN (SELECT DISTINCT subject_id FROM erased_facts)"""
