"""The privacy app's hand-written statements, one named constant each.

The two outbox parts are composed into facts' erasing statements (where facts/sql.py's
`{erasers}` placeholder stands): they write the erasure events in the statement that erases,
and only when a recipient wants them (no recipient, no rows)."""

from __future__ import annotations

OUTBOX = "privacy_webhook_outbox"
RECIPIENT = "privacy_webhook_recipient"


def _wanted(event_type: str) -> str:
    return (
        f"EXISTS (SELECT 1 FROM {RECIPIENT} AS r"
        f" WHERE r.active AND r.events @> '[\"{event_type}\"]'::jsonb)"
    )


# Inside SQL_ERASE_FACTS: `v` (the facts asked for, with today's digest and the actor's kind),
# `gone` (those deleted), %(action)s, %(now)s. Path: who erased (a reviewer's rejection is
# "review", the traveller "traveller", else the actor's kind: staff, agent, retention, ...).
OUTBOX_FACTS_SQL = f"""INSERT INTO {OUTBOX} (msg_id, event_type, subject_id, key_hash, receipt,
                         path, request_number, occurred_at, created_at)
SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), 'memory.fact.erased',
       v.subject_id, v.digest, '',
       CASE WHEN %(action)s::text = 'rejected' THEN 'review'
            WHEN v.kind = 'customer' THEN 'traveller'
            ELSE v.kind END,
       '', %(now)s, %(now)s
FROM v JOIN gone ON gone.subject_id = v.subject_id AND gone.key = v.key
WHERE {_wanted("memory.fact.erased")}"""

# Inside SQL_ERASE_SUBJECT ("forget everything"): `erased_subjects`, %(now)s. The receipt
# number and the path are filled in by the privacy service when it is the one forgetting.
OUTBOX_SUBJECT_SQL = f"""INSERT INTO {OUTBOX} (msg_id, event_type, subject_id, key_hash, receipt,
                         path, request_number, occurred_at, created_at)
SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), 'memory.subject.erased',
       s.subject_id, '', '', 'forget_everything', '', %(now)s, %(now)s
FROM erased_subjects AS s
WHERE {_wanted("memory.subject.erased")}"""

# The dispatcher takes undispatched events in id order; SKIP LOCKED lets two run side by side.
SQL_UNDISPATCHED = f"""SELECT id FROM {OUTBOX}
WHERE dispatched_at IS NULL
ORDER BY id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED"""

# Retention by month of the delivery log (`facts.partitions.month_drop`): the attempts that
# outlive their month's drop, as a condition on the month's row `t`: those whose delivery is
# still kept (the log goes with its delivery, `privacy.retention`).
ATTEMPTS_KEPT_PAST_MONTH = """EXISTS (SELECT 1 FROM privacy_webhook_delivery AS d
        WHERE d.id = t.delivery_id)"""


# Recording a request: one at a time per traveller and kind, to the end of the transaction, so
# that two arriving together cannot both become originals (the second waits and is linked as a
# duplicate of the first). hashtext is stable; a collision only serialises two unrelated pairs.
SQL_REQUEST_LOCK = "SELECT pg_advisory_xact_lock(hashtext('privacy_request'), hashtext(%s))"
