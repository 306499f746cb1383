"""Every hand-written statement of `facts`, one named constant each, so that each reads (and
pastes into psql, placeholders aside) as the SQL it is. Table names come from `tables.py`; the
f-strings are evaluated at import, so each constant's value is plain SQL.

Only the services package and `erasure.py` may execute the statements that write `memory_fact`
(`tests/facts/test_write_boundary.py`); `tests/facts/test_sql.py` runs EXPLAIN on every one.
"""

from __future__ import annotations

from .tables import FACT_EVENT, MEMORY_FACT, SUBJECT

# --- the agent's reads (selectors.py, and store.py's native async path) -----------------------
#
# Each returns only the wire columns. A fact is visible to the agent when it is active, not
# expired at %(now)s, not restricted (kept while its accuracy is checked: GDPR Art. 18), and
# its traveller has not paused memory use. Facts come in upstream order
# (the order they were first written; an update keeps a fact's place): created_at, id.

SQL_FACTS = f"""
SELECT f.key, f.value, f.category, f.updated_at, f.source_session_id, f.version
FROM {MEMORY_FACT} f
WHERE f.subject_id = %(subject)s AND f.status = 'active'
  AND (f.expires_at IS NULL OR f.expires_at > %(now)s)
  AND f.restricted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM {SUBJECT} s
                  WHERE s.subject_id = f.subject_id AND s.memory_use_paused)
ORDER BY f.created_at, f.id
"""

SQL_FACT = f"""
SELECT f.key, f.value, f.category, f.updated_at, f.source_session_id, f.version
FROM {MEMORY_FACT} f
WHERE f.subject_id = %(subject)s AND f.status = 'active'
  AND (f.expires_at IS NULL OR f.expires_at > %(now)s)
  AND f.restricted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM {SUBJECT} s
                  WHERE s.subject_id = f.subject_id AND s.memory_use_paused)
  AND f.key = %(key)s
"""

# A fact matches when any term is in its key, value or category, case aside. The terms travel
# as one text, joined by single spaces (`selectors.search_terms_param`; a term holds no
# whitespace, so splitting on the space gives them back): psycopg dumps a list element by
# element in Python, ~10 µs more than one string. Split once (an InitPlan), not per fact.
SQL_SEARCH = f"""
SELECT f.key, f.value, f.category, f.updated_at, f.source_session_id, f.version
FROM {MEMORY_FACT} f
WHERE f.subject_id = %(subject)s AND f.status = 'active'
  AND (f.expires_at IS NULL OR f.expires_at > %(now)s)
  AND f.restricted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM {SUBJECT} s
                  WHERE s.subject_id = f.subject_id AND s.memory_use_paused)
  AND EXISTS (SELECT 1 FROM unnest((SELECT string_to_array(%(terms)s::text, ' '))) AS t(term)
              WHERE strpos(lower(f.key || ' ' || f.value || ' ' || f.category),
                           lower(t.term)) > 0)
ORDER BY f.created_at, f.id
"""

# Every non-sensitive constraint in stored order (they may exceed the cap), then the newest
# other facts, as many as the cap leaves room for: that is the first max(cap, constraints) rows
# of one ordering (constraints first), so one sort and a LIMIT, the count an index scan beside it.
SQL_TIER_ONE = f"""
SELECT f.key, f.value, f.category, f.updated_at, f.source_session_id, f.version
FROM {MEMORY_FACT} f
WHERE f.subject_id = %(subject)s AND f.status = 'active'
  AND (f.expires_at IS NULL OR f.expires_at > %(now)s)
  AND f.restricted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM {SUBJECT} s
                  WHERE s.subject_id = f.subject_id AND s.memory_use_paused)
  AND NOT f.sensitive
ORDER BY f.category = 'constraint' DESC,
         CASE WHEN f.category = 'constraint' THEN f.created_at END,
         CASE WHEN f.category = 'constraint' THEN f.id END,
         f.updated_at DESC, f.created_at, f.id
LIMIT greatest(%(cap)s, (SELECT count(*) FROM {MEMORY_FACT} c
                         WHERE c.subject_id = %(subject)s AND c.category = 'constraint'
                           AND c.status = 'active' AND NOT c.sensitive
                           AND c.restricted_at IS NULL
                           AND (c.expires_at IS NULL OR c.expires_at > %(now)s)))
"""

SQL_PURGE_GENERATION = f"""
SELECT coalesce((SELECT purge_generation FROM {SUBJECT} WHERE subject_id = %(subject)s), 0)
"""

# --- the writes (services/commit.py, upsert.py) and the traveller's lock (services/forgetting.py)

SQL_LOCK_SUBJECT = f"""
SELECT memory_paused, memory_use_paused FROM {SUBJECT} WHERE subject_id = %s FOR UPDATE
"""

SQL_LOCK_SUBJECT_ONLY = f"""
SELECT 1 FROM {SUBJECT} WHERE subject_id = %s FOR UPDATE
"""

# The same, by name: the lock of the store's delete (`erasure.erase_fact_write`).
SQL_LOCK_SUBJECT_NAMED = f"""
SELECT 1 FROM {SUBJECT} WHERE subject_id = %(subject)s FOR UPDATE
"""

SQL_NEW_SUBJECT = f"""
INSERT INTO {SUBJECT} (subject_id, purge_generation, memory_paused, memory_use_paused,
                       legal_hold, created_at, updated_at)
VALUES (%s, 0, false, false, false, %s, %s)
ON CONFLICT (subject_id) DO NOTHING
"""

# The rows come as tuples in this order (plan.FACT_COLUMNS names them).
SQL_EXISTING = f"""
SELECT id, key, value, category, status, sensitive, expires_at, expiry_pinned, version,
       source_session_id, created_at, updated_at, evidence, evidence_origin, restricted_at
FROM {MEMORY_FACT}
WHERE subject_id = %s AND key = ANY(%s)
"""

# One statement per kind of change, whatever the batch size. Each row carries its own
# updated_at: a batch is stamped in order, a microsecond apart, so a later fact of the batch is
# the newer one (tier one's order), as upstream has it. The rows travel as one JSON
# document each (jsonb_to_recordset), not as arrays: psycopg dumps arrays element by element in
# Python, which cost more than running the statements.
SQL_INSERT_FACTS = f"""
INSERT INTO {MEMORY_FACT} (subject_id, key, value, category, updated_at, changed_at,
                           source_session_id, created_at, origin, status, sensitive,
                           expires_at, expiry_pinned, version, evidence, evidence_origin)
SELECT %s, r.key, r.value, r.category, r.updated_at, r.updated_at, %s, %s, %s, r.status,
       r.sensitive, r.expires_at, false, 1, r.evidence, r.evidence_origin
FROM ROWS FROM (jsonb_to_recordset(%s::jsonb) AS (key text, value text, category text,
                                                  status text, sensitive boolean,
                                                  expires_at timestamptz,
                                                  updated_at timestamptz, evidence text,
                                                  evidence_origin text))
     WITH ORDINALITY AS r(key, value, category, status, sensitive, expires_at, updated_at,
                          evidence, evidence_origin, n)
ORDER BY r.n
"""

# The traveller is named although the ids alone find the rows: every statement of the agent's
# path names one subject_id, so a table distributed on it routes this one to one shard. A row
# whose `rewritten_by` is null keeps the column (a new category alone keeps who wrote the
# words). Every version goes through it: the upsert's and a person's change (services/plan.py).
SQL_UPDATE_FACTS = f"""
UPDATE {MEMORY_FACT} AS f
SET value = r.value, category = r.category, updated_at = r.updated_at, changed_at = r.changed_at,
    source_session_id = r.source_session_id, status = r.status, sensitive = r.sensitive,
    expires_at = r.expires_at, expiry_pinned = r.expiry_pinned, version = r.version,
    evidence = r.evidence, evidence_origin = r.evidence_origin,
    rewritten_by = coalesce(r.rewritten_by, f.rewritten_by),
    rewritten_by_label = coalesce(r.rewritten_by_label, f.rewritten_by_label)
FROM jsonb_to_recordset(%s::jsonb) AS r(id bigint, value text, category text,
                                        source_session_id text, status text,
                                        sensitive boolean, expires_at timestamptz,
                                        expiry_pinned boolean, version integer,
                                        updated_at timestamptz, changed_at timestamptz,
                                        evidence text, evidence_origin text,
                                        rewritten_by text, rewritten_by_label text)
WHERE f.id = r.id AND f.subject_id = %s
"""

SQL_INSERT_EVENTS = f"""
INSERT INTO {FACT_EVENT} (subject_id, key, key_hash, action, actor_kind, actor_user_id,
                          actor_label, reason, before, after, session_tag, created_at)
SELECT %s, r.key, r.key_hash, r.action, %s, %s, %s, %s, r.before, r.after, %s, %s
FROM ROWS FROM (jsonb_to_recordset(%s::jsonb) AS (key text, key_hash text, action text,
                                                  before jsonb, after jsonb))
     WITH ORDINALITY AS r(key, key_hash, action, before, after, n)
ORDER BY r.n
"""

# --- erasure (erasure.py) ------------------------------------------------------------------------
#
# The two erasing statements, each a psycopg.sql template with one named placeholder,
# `{erasers}`, where the erasers' parts go (`, eraser_0 AS (...)`, registered at run time by the
# apps above `facts`): the one piece composed at run time (erasure.erasing_statement), after
# `erased_subjects`, which they read. With no eraser the placeholder is empty. The erasers' SQL
# may read `erased_subjects(subject_id)` (the travellers touched) and
# `erased_facts(subject_id, key_hash)` (every history hash of each fact that went; empty on
# "forget everything", where everything of `erased_subjects` goes).

# Delete the facts named in `v`, blank and hash their history (found by subject and each
# candidate hash in `m`), record one erasure event per fact that went, run the erasers' SQL.
# Every part reads `gone`, so nothing happens for a fact that was not there. LATERAL with
# OFFSET 0 is not flattened: each fact is found through its unique index (a join lets the
# planner hash the whole table for a chunk of 1,000).
SQL_ERASE_FACTS = f"""
WITH v AS (SELECT * FROM jsonb_to_recordset(%(facts)s::jsonb)
                         AS v(subject_id text, key text, digest text, kind text,
                              user_id integer, label text, n integer)),
m AS (SELECT * FROM jsonb_to_recordset(%(matches)s::jsonb)
                    AS m(subject_id text, key text, hash text)),
gone AS (DELETE FROM {MEMORY_FACT} AS f
         WHERE f.id IN (SELECT hit.id FROM v
                        CROSS JOIN LATERAL (SELECT x.id FROM {MEMORY_FACT} AS x
                                            WHERE x.subject_id = v.subject_id
                                              AND x.key = v.key
                                            OFFSET 0) AS hit)
         RETURNING f.subject_id, f.key, f.category, f.created_at, f.version),
redacted AS (UPDATE {FACT_EVENT} AS e
             SET key = e.key_hash, before = NULL, after = NULL,
                 redacted_at = COALESCE(e.redacted_at, %(now)s)
             FROM gone JOIN m ON m.subject_id = gone.subject_id AND m.key = gone.key
             WHERE e.subject_id = m.subject_id AND e.key_hash = m.hash
               AND e.key <> e.key_hash),
recorded AS (INSERT INTO {FACT_EVENT} (subject_id, key, key_hash, action, actor_kind,
                                       actor_user_id, actor_label, reason, session_tag,
                                       created_at, after)
             SELECT v.subject_id, v.digest, v.digest, %(action)s, v.kind, v.user_id, v.label,
                    %(reason)s, '', %(now)s,
                    -- what support may still say about it: never its key or value
                    jsonb_build_object('erased_fact', jsonb_build_object(
                        'category', gone.category, 'learned_at', gone.created_at,
                        'changes', gone.version - 1))
             FROM v JOIN gone ON gone.subject_id = v.subject_id AND gone.key = v.key
             ORDER BY v.n),
erased_subjects AS (SELECT DISTINCT subject_id FROM gone),
erased_facts AS (SELECT m.subject_id, m.hash AS key_hash
                 FROM gone JOIN m ON m.subject_id = gone.subject_id AND m.key = gone.key)
{{erasers}}SELECT subject_id, key FROM gone
"""

# Forget everything about one traveller: every fact, and every event still showing a key.
# Returns what each fact leaves (its key only to hash it in Python; never stored in plain).
SQL_ERASE_SUBJECT = f"""
WITH gone AS (DELETE FROM {MEMORY_FACT} WHERE subject_id = %(subject)s
              RETURNING key, category, created_at, version),
redacted AS (UPDATE {FACT_EVENT}
             SET key = key_hash, before = NULL, after = NULL,
                 redacted_at = COALESCE(redacted_at, %(now)s)
             WHERE subject_id = %(subject)s AND key <> '' AND key <> key_hash),
erased_subjects AS (SELECT %(subject)s::text AS subject_id),
erased_facts AS (SELECT NULL::text AS subject_id, NULL::text AS key_hash WHERE false)
{{erasers}}SELECT key, category, created_at, version FROM gone
"""

# --- erasing one fact as a server-side function (erasure.erase_fact_write, db.LockedWrite) ------
#
# SQL_ERASE_FACTS for one fact, written as the plain statements of a PL/pgSQL function after the
# traveller's lock: each plans and starts in a fraction of what the same parts of one WITH query
# cost (joins of CTE scans, the facts as JSON; bench/delete_floor.py). The same rows change:
# the fact's row goes, every event of its history is blanked and hashed, one erasure event is
# written, and each registered eraser runs as its own statement over the WITH names it is
# written against (`ERASE_FACT_ERASER_NAMES`). The function's parameters: %(subject)s, %(key)s,
# %(digest)s (today's keyed hash), %(hashes)s (every history hash), %(kind)s, %(user)s and
# %(label)s (the actor), %(action)s, %(reason)s, %(now)s; `gone_row` is the row deleted.
#
# The history is blanked one hash at a time (today's digest, then one per fallback secret: one
# round almost always), each by equality, and so is each eraser that reads `erased_facts` (the
# receipts, the quality sample: `{fact_erasers}`, with `erased_facts` that one hash). Given the
# hashes as an array (`key_hash = ANY(array)`, or a join to `unnest(array)`), the generic plan
# found a month's rows by the traveller alone and filtered them, reading every page of the
# traveller's events and receipts that month (98 pages and 0.46 ms for a traveller with 112
# events in the month, against 4 pages and 0.07 ms through the (subject_id, key_hash) index that
# equality uses; tests/facts/test_erasure_plans.py). The other erasers run once, after the
# erasure's event (`{erasers}`).
PLPGSQL_ERASE_FACT_DECLARE = "gone_row record;\neach_hash text;"
PLPGSQL_ERASE_FACT = f"""
DELETE FROM {MEMORY_FACT} AS f WHERE f.subject_id = %(subject)s AND f.key = %(key)s
RETURNING f.subject_id, f.key, f.category, f.created_at, f.version INTO gone_row;
IF NOT FOUND THEN
  RETURN;
END IF;
FOREACH each_hash IN ARRAY %(hashes)s LOOP
  UPDATE {FACT_EVENT} AS e
  SET key = e.key_hash, before = NULL, after = NULL,
      redacted_at = COALESCE(e.redacted_at, %(now)s)
  WHERE e.subject_id = %(subject)s AND e.key_hash = each_hash AND e.key <> e.key_hash;
{{fact_erasers}}END LOOP;
INSERT INTO {FACT_EVENT} (subject_id, key, key_hash, action, actor_kind, actor_user_id,
                          actor_label, reason, session_tag, created_at, after)
VALUES (%(subject)s, %(digest)s, %(digest)s, %(action)s, %(kind)s, %(user)s, %(label)s,
        %(reason)s, '', %(now)s,
        jsonb_build_object('erased_fact', jsonb_build_object(
            'category', gone_row.category, 'learned_at', gone_row.created_at,
            'changes', gone_row.version - 1)));
{{erasers}}RETURN QUERY SELECT gone_row.subject_id, gone_row.key;
"""
# Ahead of each eraser's SQL in that function: the names SQL_ERASE_FACTS gives it, for one fact
# (`erased_facts`: the hash of the loop's round; the erasers that read it run in that loop).
ERASE_FACT_ERASER_NAMES = """
WITH v AS (SELECT %(subject)s::text AS subject_id, %(key)s::text AS key,
                  %(digest)s::text AS digest, %(kind)s::text AS kind,
                  %(user)s::integer AS user_id, %(label)s::text AS label, 0 AS n),
gone AS (SELECT gone_row.subject_id, gone_row.key, gone_row.category, gone_row.created_at,
                gone_row.version),
erased_subjects AS (SELECT %(subject)s::text AS subject_id),
erased_facts AS (SELECT %(subject)s::text AS subject_id, each_hash AS key_hash)
"""

# --- redacting one past version (services/redaction.py `fact_version_redact`) -----------------
#
# Blank one version's value and quote in every snapshot that holds it: the `after` of the event
# that wrote it and the `before` of the event that replaced it, found as an erasure finds a
# fact's events (subject, each history hash) and limited to the fact's current life (the plain
# key: an earlier life's events are already blank and hashed). What stays of the snapshot is
# the version, its category, status, flags and expiry, with `value` null and `redacted_at` set.
# It changes no indexed column (`after`, `before` are in no index), so it stays a HOT update as
# an erasure's redaction does. Returns each event changed.
SQL_REDACT_VERSION = f"""
UPDATE {FACT_EVENT} AS e
SET after = CASE WHEN e.after @> jsonb_build_object('version', %(version)s::integer)
                 THEN (e.after - 'evidence')
                      || jsonb_build_object('value', NULL, 'redacted_at', %(now)s::timestamptz)
                 ELSE e.after END,
    before = CASE WHEN e.before @> jsonb_build_object('version', %(version)s::integer)
                  THEN (e.before - 'evidence')
                       || jsonb_build_object('value', NULL, 'redacted_at', %(now)s::timestamptz)
                  ELSE e.before END
WHERE e.subject_id = %(subject)s AND e.key_hash = ANY(%(hashes)s) AND e.key = %(key)s
  AND (e.after @> jsonb_build_object('version', %(version)s::integer)
       OR e.before @> jsonb_build_object('version', %(version)s::integer))
RETURNING e.id
"""

# --- retention of the history: one rule for the row sweep and the drop by month ---------------
#
# The history rows that outlive the audit retention, as conditions on a row `t`: a traveller
# under legal hold keeps all of theirs (a hold preserves the record), and a fact still alive
# keeps its events (its key is still plain in them: an erased fact's events carry its digest in
# `key` as in `key_hash`, a traveller-wide event has neither: no lookup for those). The row
# sweep (`SQL_SWEEP_EVENTS`) deletes old rows that match neither; the drop by month
# (`partitions.month_drop`) copies the rows of each part in turn, each through its own index:
# the held travellers' through `memory_subject_held` then the month's (subject_id, created_at),
# the live facts' through the closed month's own index of rows with a plain key (below).
EVENTS_OF_HELD_TRAVELLERS = f"""t.subject_id IN (SELECT subject_id FROM {SUBJECT}
                 WHERE legal_hold)"""

EVENTS_OF_LIVE_FACTS = f"""t.key <> t.key_hash
AND EXISTS (SELECT 1 FROM {MEMORY_FACT} AS f WHERE f.subject_id = t.subject_id AND f.key = t.key)"""

# The same rule as the drop by month runs it: `OFFSET 0` keeps the EXISTS a lookup per row of
# the month's plain-keyed rows (found through its closed index). Without it the planner may
# turn the EXISTS into a join driven from memory_fact and read the month once per fact's
# traveller: 35 s instead of a fraction of one on a 4-million-row month against 100,000 facts
# (bench/drop_profile.py). The sweep keeps the plain rule, whose hashed lookup suits it.
EVENTS_OF_LIVE_FACTS_PER_ROW = f"""t.key <> t.key_hash
AND EXISTS (SELECT 1 FROM {MEMORY_FACT} AS f WHERE f.subject_id = t.subject_id AND f.key = t.key
            OFFSET 0)"""

# The index each closed month of the history gets (`partitions.closed_months_index`), whose
# predicate is the first condition of EVENTS_OF_LIVE_FACTS: columns and predicate, not a
# statement (tests/facts/test_partitions.py checks the drop's plan uses it).
EVENTS_OF_LIVE_FACTS_INDEX = """(created_at) WHERE key <> key_hash"""

EVENTS_KEPT_PAST_RETENTION = f"""({EVENTS_OF_HELD_TRAVELLERS})
OR ({EVENTS_OF_LIVE_FACTS})"""

# The audit sweep (`services.events_sweep_old`): up to %(limit)s rows older than the cutoff that
# the rule above does not keep; rows a concurrent sweep holds are skipped. The ids are taken
# first (one array, an InitPlan), so the DELETE finds each through the primary key of the old
# months only (a join would hash every row of every month, each chunk).
SQL_SWEEP_EVENTS = f"""
DELETE FROM {FACT_EVENT}
WHERE created_at < %(cutoff)s
  AND id = ANY (ARRAY(SELECT t.id FROM {FACT_EVENT} AS t
                      WHERE t.created_at < %(cutoff)s AND NOT ({EVENTS_KEPT_PAST_RETENTION})
                      LIMIT %(limit)s FOR UPDATE SKIP LOCKED))
"""

# --- the memory as of a date (staff/selectors.py `staff_memory_as_of`) --------------------------
#
# Each fact's last snapshot at or before %(at)s, one row per keyed hash, worked out by the server
# from the traveller's history (the whole history never leaves it): an erasure at or before the
# moment ends the fact (a later event of the same key starts it again, as the history reads); an
# event that changed no snapshot is passed over; a redacted snapshot (its fact erased since) is
# returned blank (and a version redacted on its own comes back with its value null and its
# `redacted_at`). `learned_at` is the first event since the last such erasure; `erased_on` and
# `erased_category` come from the first erasure after the moment (the one that blanked it). The
# events are read once, narrow (flags, no snapshot); only the winners' snapshots are fetched, by
# primary key. `l.id` (the snapshot's event) orders the facts of one batch as their `updated_at`
# did: a later fact of a batch is the newer one.
SQL_MEMORY_AS_OF = f"""
WITH ev AS MATERIALIZED (
    SELECT e.id, e.key_hash, e.key, e.redacted_at IS NOT NULL AS redacted, e.created_at,
           coalesce(jsonb_typeof(e.after) = 'object' AND e.after ? 'erased_fact', false)
               AS is_erasure,
           coalesce(jsonb_typeof(e.after) = 'object' AND e.after ? 'value', false) AS has_value
    FROM {FACT_EVENT} e
    WHERE e.subject_id = %(subject)s AND e.key_hash <> ''
),
gone AS (
    SELECT DISTINCT ON (key_hash) key_hash, created_at, id
    FROM ev
    WHERE is_erasure AND created_at <= %(at)s
    ORDER BY key_hash, created_at DESC, id DESC
),
latest AS (
    SELECT DISTINCT ON (ev.key_hash)
           ev.key_hash, ev.id, ev.key, ev.redacted, ev.created_at,
           min(ev.created_at) OVER (PARTITION BY ev.key_hash) AS learned_at
    FROM ev LEFT JOIN gone g ON g.key_hash = ev.key_hash
    WHERE NOT ev.is_erasure AND ev.created_at <= %(at)s AND (ev.redacted OR ev.has_value)
      AND (g.key_hash IS NULL OR (ev.created_at, ev.id) > (g.created_at, g.id))
    ORDER BY ev.key_hash, ev.created_at DESC, ev.id DESC
),
erasures AS (
    SELECT DISTINCT ON (ev.key_hash) ev.key_hash, ev.created_at AS erased_on,
           CASE WHEN jsonb_typeof(e.after -> 'erased_fact') = 'object'
                THEN e.after -> 'erased_fact' ->> 'category' END AS erased_category
    FROM ev JOIN {FACT_EVENT} e
      ON e.id = ev.id AND e.created_at = ev.created_at AND e.subject_id = %(subject)s
    WHERE ev.is_erasure AND ev.created_at > %(at)s
    ORDER BY ev.key_hash, ev.created_at, ev.id
)
SELECT l.key_hash, l.key, l.redacted, l.created_at, l.id, l.learned_at,
       e.after ->> 'value', e.after ->> 'category', e.after ->> 'status',
       coalesce((e.after ->> 'sensitive')::boolean, false), e.after ->> 'expires_at',
       (e.after ->> 'version')::integer, x.erased_on, x.erased_category,
       (e.after ->> 'redacted_at')::timestamptz
FROM latest l
JOIN {FACT_EVENT} e
  ON e.id = l.id AND e.created_at = l.created_at AND e.subject_id = %(subject)s
LEFT JOIN erasures x ON x.key_hash = l.key_hash
"""
