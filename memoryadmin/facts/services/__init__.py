"""Every write to the system of record, one module per kind of write. Each service is
keyword-only, one transaction, and writes its own event naming the actor (FactEvent, or
PolicyEvent for policy); nothing outside this package writes MemoryFact (tests check it).

Writes for one traveller are serialized by locking their Subject row: concurrent upserts of the
same key then see each other's result, so versions count real changes and no write is lost.
Callers import from here (`services.fact_upsert`): this package exports the services and the
types their arguments and results need, nothing else. The steps they share (the lock, the event
record: `history.py`) stay inside; reads are `facts.selectors`, checks `facts.validation` and
`facts.retention` (a proposed rule, the rule set it would make)."""

from __future__ import annotations

from .changes import (
    fact_approve,
    fact_edit,
    fact_expire,
    fact_flag_sensitive,
    fact_quotes_confirm,
    fact_reveal,
    fact_set_expiry,
    fact_unflag_sensitive,
    facts_bulk_apply,
)
from .forgetting import (
    fact_delete,
    fact_delete_async,
    fact_reject,
    subject_clear,
    subject_forget,
)
from .importing import (
    IMPORT_CHUNK_SIZE,
    ImportDraft,
    ImportResult,
    facts_import,
)
from .policy import (
    RuleProposal,
    memory_settings_update,
    policy_record,
    retention_rule_delete,
    retention_rule_save,
    use_retention_update,
)
from .redaction import fact_version_redact
from .restriction import fact_restrict, fact_unrestrict
from .retention import (
    ChunkResult,
    events_sweep_old,
    facts_sweep_expired,
    retention_recompute_chunk,
)
from .review import fact_quality_mark, fact_review_decide
from .subjects import (
    subject_set_legal_hold,
    subject_set_preferences,
)
from .upsert import (
    ABSENT,
    FactDraft,
    FactState,
    UpsertResult,
    fact_upsert,
    fact_upsert_async,
)

__all__ = [
    # what the services take and give back
    "ABSENT",
    "ChunkResult",
    "FactDraft",
    "FactState",
    "IMPORT_CHUNK_SIZE",
    "ImportDraft",
    "ImportResult",
    "RuleProposal",
    "UpsertResult",
    # the services
    "events_sweep_old",
    "fact_approve",
    "fact_delete",
    "fact_delete_async",
    "fact_edit",
    "fact_expire",
    "fact_flag_sensitive",
    "fact_quotes_confirm",
    "fact_reject",
    "fact_restrict",
    "fact_quality_mark",
    "fact_review_decide",
    "fact_reveal",
    "fact_set_expiry",
    "fact_unflag_sensitive",
    "fact_unrestrict",
    "fact_upsert",
    "fact_upsert_async",
    "fact_version_redact",
    "facts_bulk_apply",
    "facts_import",
    "facts_sweep_expired",
    "memory_settings_update",
    "policy_record",
    "retention_recompute_chunk",
    "retention_rule_delete",
    "retention_rule_save",
    "subject_clear",
    "subject_forget",
    "subject_set_legal_hold",
    "subject_set_preferences",
    "use_retention_update",
]
