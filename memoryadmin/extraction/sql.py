"""Extraction's hand-written statements, one named constant each, readable (and pasteable into
psql, placeholders aside) as the SQL they are. Table names come from `extraction/tables.py` and
`facts/tables.py`; the f-strings are evaluated at import, so each value is plain SQL.

A job is finished when its status is 'failed', 'skipped' or 'succeeded' (`FINISHED_STATUSES`;
`tests/facts/test_sql.py` checks the two agree, and that SQL_BEGIN returns the job's columns in
the model's order, which `services._job_from_row` relies on).
"""

from __future__ import annotations

from memoryadmin.facts.tables import MEMORY_FACT, SUBJECT

from .tables import EXTRACTION_JOB

# The job's columns, in the order of ExtractionJob's fields.
JOB_COLUMNS = (
    "id",
    "public_id",
    "subject_id",
    "session_tag",
    "turn_id",
    "status",
    "reason",
    "proposed",
    "stored",
    "updated",
    "duplicates",
    "blocked",
    "sent_to_review",
    "invalid",
    "cut_by_cap",
    "model",
    "input_tokens",
    "output_tokens",
    "attempts",
    "queued_at",
    "started_at",
    "finished_at",
    "sent_at",
    "sends",
    "retryable",
    "created_by_label",
    "transcript",
    "used",
    "prompt_version",
)

# Starts the job and reads all its extraction needs, in one statement: the job's columns, the
# traveller's purge generation and learning switch, and every held fact as one JSON text (not a
# restricted one: kept while it is checked, it is not sent to the model either). The
# attempt is counted and the model named only when the model will be called: the airline-wide
# checks passed (%(may_call)s), there is a transcript, and learning is not paused (exactly
# when runtime._extract goes on to the call), with the extraction prompt's version.
#
# set_config(..., true) lasts until the end of the statement's own transaction (autocommit),
# whose commit then does not wait for the WAL flush (see services.job_begin). Inside a caller's
# transaction the caller's commit decides: SQL_BEGIN_IN_TRANSACTION, the same without it.
# save_memory's quotes saved in the hour before the turn was posted, still the assistant's
# (evidence origin 'agent'): the turn is what they are checked against (runtime._confirm_quotes).
AGENT_QUOTES = f"""(SELECT json_agg(json_build_array(f.key, f.evidence) ORDER BY f.key)::text
           FROM {MEMORY_FACT} f
           WHERE f.subject_id = j.subject_id AND f.evidence_origin = 'agent'
             AND f.evidence <> '' AND f.updated_at <= j.queued_at
             AND f.updated_at >= j.queued_at - interval '1 hour')"""

# "The model will be called" (above), written once for the three columns it decides.
CALLS_MODEL = f"""(%(may_call)s
       AND jsonb_typeof(j.transcript) = 'array'
       AND jsonb_array_length(j.transcript) > 0
       AND NOT coalesce((SELECT s.memory_paused FROM {SUBJECT} s
                         WHERE s.subject_id = j.subject_id), false))"""

SQL_BEGIN = f"""
UPDATE {EXTRACTION_JOB} AS j
SET status = 'running',
    started_at = %(now)s,
    attempts = j.attempts + CASE WHEN {CALLS_MODEL} THEN 1 ELSE 0 END,
    model = CASE WHEN {CALLS_MODEL} THEN %(model)s ELSE j.model END,
    prompt_version = CASE WHEN {CALLS_MODEL} THEN %(prompt_version)s ELSE j.prompt_version END
FROM (SELECT set_config('synchronous_commit', 'off', true)) AS no_flush
WHERE j.id = %(job)s AND j.status NOT IN ('failed', 'skipped', 'succeeded')
RETURNING j.id, j.public_id, j.subject_id, j.session_tag, j.turn_id, j.status, j.reason,
          j.proposed, j.stored, j.updated, j.duplicates, j.blocked, j.sent_to_review,
          j.invalid, j.cut_by_cap, j.model, j.input_tokens, j.output_tokens, j.attempts,
          j.queued_at, j.started_at, j.finished_at, j.sent_at, j.sends, j.retryable,
          j.created_by_label, j.transcript, j.used, j.prompt_version,
          coalesce((SELECT s.purge_generation FROM {SUBJECT} s
                    WHERE s.subject_id = j.subject_id), 0),
          coalesce((SELECT s.memory_paused FROM {SUBJECT} s
                    WHERE s.subject_id = j.subject_id), false),
          (SELECT json_agg(json_build_array(f.key, f.value, f.category, f.status)
                           ORDER BY f.category, f.key)::text
           FROM {MEMORY_FACT} f
           WHERE f.subject_id = j.subject_id AND f.restricted_at IS NULL),
          {AGENT_QUOTES}
"""

SQL_BEGIN_IN_TRANSACTION = f"""
UPDATE {EXTRACTION_JOB} AS j
SET status = 'running',
    started_at = %(now)s,
    attempts = j.attempts + CASE WHEN {CALLS_MODEL} THEN 1 ELSE 0 END,
    model = CASE WHEN {CALLS_MODEL} THEN %(model)s ELSE j.model END,
    prompt_version = CASE WHEN {CALLS_MODEL} THEN %(prompt_version)s ELSE j.prompt_version END
WHERE j.id = %(job)s AND j.status NOT IN ('failed', 'skipped', 'succeeded')
RETURNING j.id, j.public_id, j.subject_id, j.session_tag, j.turn_id, j.status, j.reason,
          j.proposed, j.stored, j.updated, j.duplicates, j.blocked, j.sent_to_review,
          j.invalid, j.cut_by_cap, j.model, j.input_tokens, j.output_tokens, j.attempts,
          j.queued_at, j.started_at, j.finished_at, j.sent_at, j.sends, j.retryable,
          j.created_by_label, j.transcript, j.used, j.prompt_version,
          coalesce((SELECT s.purge_generation FROM {SUBJECT} s
                    WHERE s.subject_id = j.subject_id), 0),
          coalesce((SELECT s.memory_paused FROM {SUBJECT} s
                    WHERE s.subject_id = j.subject_id), false),
          (SELECT json_agg(json_build_array(f.key, f.value, f.category, f.status)
                           ORDER BY f.category, f.key)::text
           FROM {MEMORY_FACT} f
           WHERE f.subject_id = j.subject_id AND f.restricted_at IS NULL),
          {AGENT_QUOTES}
"""

# The counts SQL_SUCCEED sets, each its own parameter.
SUCCESS_COUNTS = (
    "proposed",
    "stored",
    "updated",
    "duplicates",
    "blocked",
    "sent_to_review",
    "invalid",
    "cut_by_cap",
    "input_tokens",
    "output_tokens",
)

# Ends the job, or refuses: the guard function (migration 0003) raises MA001 when the UPDATE
# matched nothing (a finished job, or a clear moved the purge generation), so that the
# statement can travel in one round trip with the facts' writes and the COMMIT, which the error
# then cancels.
SQL_SUCCEED = f"""
WITH ended AS (
  UPDATE {EXTRACTION_JOB} AS j
  SET status = 'succeeded', reason = '', retryable = false, model = %(model)s,
      finished_at = %(now)s, transcript = NULL,
      proposed = %(proposed)s, stored = %(stored)s, updated = %(updated)s,
      duplicates = %(duplicates)s, blocked = %(blocked)s, sent_to_review = %(sent_to_review)s,
      invalid = %(invalid)s, cut_by_cap = %(cut_by_cap)s, input_tokens = %(input_tokens)s,
      output_tokens = %(output_tokens)s
  WHERE j.id = %(job)s AND j.status NOT IN ('failed', 'skipped', 'succeeded')
    AND coalesce((SELECT s.purge_generation FROM {SUBJECT} s
                  WHERE s.subject_id = j.subject_id), 0) = %(generation)s
  RETURNING 1
)
SELECT extraction_job_must_end(EXISTS (SELECT FROM ended), %(job)s)
"""

# A cleared traveller's transcripts, as a part of the erasing statement (facts/erasure.py splices
# it in after `erased_subjects`, which it reads); registered with on_facts=False.
SQL_ERASE_TRANSCRIPTS = f"""
UPDATE {EXTRACTION_JOB} SET transcript = NULL, used = NULL
WHERE subject_id IN (SELECT subject_id FROM erased_subjects)
  AND (transcript IS NOT NULL OR used IS NOT NULL)
"""
