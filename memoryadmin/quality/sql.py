"""The quality app's hand-written statements, one named constant each (`tests/facts/test_sql.py`
plans every one): the two eraser parts, spliced into facts' erasing statements, and the
reviewer-free signals of the "Memory quality" page."""

from __future__ import annotations

from memoryadmin.facts.tables import FACT_EVENT

from .tables import QUALITY_SAMPLE_ITEM

# A sampled fact that is erased leaves its item anonymous: no traveller, hash or link, only the
# mark and the dimensions the precision is counted by (none of them a value or a key).
QUALITY_ERASE_FACTS_SQL = f"""UPDATE {QUALITY_SAMPLE_ITEM} AS i
SET fact_id = NULL, subject_id = '', key_hash = '', erased_at = %(now)s
FROM erased_facts AS e
WHERE i.subject_id = e.subject_id AND i.key_hash = e.key_hash"""

QUALITY_ERASE_SUBJECTS_SQL = f"""UPDATE {QUALITY_SAMPLE_ITEM}
SET fact_id = NULL, subject_id = '', key_hash = '', erased_at = %(now)s
WHERE subject_id IN (SELECT subject_id FROM erased_subjects)"""

# The signals that need no reviewer, over the facts learned (first written by extraction or
# the agent's save_memory) since %(since)s: how many were corrected or deleted by the traveller
# within 30 days of being learned, and how many staff rejected or edited. Found through each
# fact's keyed hash (fact_event_subject_hash), so an erased fact still counts. One statement.
SQL_LEARNED_SIGNALS = f"""
WITH learned AS (
  SELECT e.subject_id, e.key_hash, min(e.created_at) AS learned_at
  FROM {FACT_EVENT} e
  WHERE e.action = 'created' AND e.actor_kind IN ('extraction', 'agent')
    AND e.key_hash <> '' AND e.created_at >= %(since)s
  GROUP BY e.subject_id, e.key_hash
)
SELECT count(*) AS learned,
       count(*) FILTER (WHERE EXISTS (
         SELECT FROM {FACT_EVENT} c
         WHERE c.subject_id = l.subject_id AND c.key_hash = l.key_hash
           AND c.created_at > l.learned_at
           AND c.created_at <= l.learned_at + interval '30 days'
           AND c.actor_kind = 'customer' AND c.action IN ('updated', 'deleted'))) AS corrected,
       count(*) FILTER (WHERE EXISTS (
         SELECT FROM {FACT_EVENT} s
         WHERE s.subject_id = l.subject_id AND s.key_hash = l.key_hash
           AND s.created_at > l.learned_at
           AND s.actor_kind = 'staff' AND s.action IN ('updated', 'rejected')))
         AS staff_changed
FROM learned l
"""
