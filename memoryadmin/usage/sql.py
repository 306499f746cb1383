"""Every hand-written statement of `usage`, one named constant each (pasteable into psql,
placeholders aside). `tests/facts/test_sql.py` runs EXPLAIN on each."""

from __future__ import annotations

from memoryadmin.facts.tables import MEMORY_FACT

from .tables import MEMORY_USE

# One multi-row INSERT for any number of receipts of one traveller: the batch travels as one
# JSON document; keys the traveller has no fact under are dropped by the join (unknown keys are
# ignored), each found through the fact's unique index. Only the keyed hash and the row id are
# stored, never the key.
SQL_RECORD_USES = f"""
INSERT INTO {MEMORY_USE} (subject_id, key_hash, fact_id, session_tag, turn_id, how, used_at)
SELECT %(subject)s, r.key_hash, f.id, r.session_tag, r.turn_id, r.how, %(now)s
FROM jsonb_to_recordset(%(uses)s::jsonb)
     AS r(key text, key_hash text, session_tag text, turn_id text, how text)
JOIN {MEMORY_FACT} f ON f.subject_id = %(subject)s AND f.key = r.key
"""

# Receipts past their retention, a chunk at a time (the sweep re-runs until none is left).
SQL_SWEEP_USES = f"""
DELETE FROM {MEMORY_USE}
WHERE id IN (SELECT id FROM {MEMORY_USE} WHERE used_at < %(cutoff)s
             ORDER BY used_at LIMIT %(limit)s)
"""

# The erasers' parts of the erasing statements (facts/sql.py): a fact's receipts go with it,
# found through the hashes of the facts that went (`erased_facts`); on "forget everything"
# every receipt of the traveller goes (`erased_subjects`).
USAGE_ERASE_FACTS_SQL = f"""DELETE FROM {MEMORY_USE} AS u
USING erased_facts AS e
WHERE u.subject_id = e.subject_id AND u.key_hash = e.key_hash"""

USAGE_ERASE_SUBJECTS_SQL = f"""DELETE FROM {MEMORY_USE}
WHERE subject_id IN (SELECT subject_id FROM erased_subjects)"""
