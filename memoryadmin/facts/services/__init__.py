"""Every write to the system of record, one module per kind of write. Each service is
keyword-only, one transaction, and writes its own event naming the actor (FactEvent, or
PolicyEvent for policy); nothing outside this package writes MemoryFact (tests check it).

Writes for one traveller are serialized by locking their Subject row: concurrent upserts of the
same key then see each other's result, so versions count real changes and no write is lost.
Callers import from here (`services.fact_upsert`); the modules are how the code is kept.
"""

from __future__ import annotations

from ..models import FactEvent  # tests read the history through here
from .changes import (
    BULK_ACTIONS,
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
from .events import (
    apply_retention,
    clean_subject_id,
    commit_change,
    is_unchanged,
    load_for_update,
    lock_subject,
    matching_rule,
    record_event,
    row_expiry,
    snapshot,
)
from .forgetting import (
    fact_delete,
    fact_delete_async,
    fact_reject,
    new_receipt_number,
    subject_clear,
    subject_forget,
)
from .importing import (
    IMPORT_CHUNK_SIZE,
    ImportDraft,
    ImportResult,
    facts_import,
)
from .retention import (
    LIMITS,
    MODEL_NAME,
    PINNED_EXPIRY_ACTOR,
    SETTINGS_FIELDS,
    ChunkResult,
    RuleProposal,
    check_rule,
    clean_rule,
    clean_settings,
    events_sweep_old,
    facts_sweep_expired,
    memory_settings_update,
    policy_changed,
    policy_history,
    policy_record,
    recompute_starter_set,
    retention_recompute_chunk,
    retention_rule_delete,
    retention_rule_save,
    rules_after,
    use_retention_days,
    use_retention_update,
)
from .review import fact_review_decide
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
    "ABSENT",
    "BULK_ACTIONS",
    "ChunkResult",
    "FactDraft",
    "FactEvent",
    "FactState",
    "IMPORT_CHUNK_SIZE",
    "ImportDraft",
    "ImportResult",
    "LIMITS",
    "MODEL_NAME",
    "PINNED_EXPIRY_ACTOR",
    "RuleProposal",
    "SETTINGS_FIELDS",
    "UpsertResult",
    "apply_retention",
    "check_rule",
    "clean_rule",
    "clean_settings",
    "clean_subject_id",
    "commit_change",
    "events_sweep_old",
    "fact_approve",
    "fact_delete",
    "fact_delete_async",
    "fact_edit",
    "fact_expire",
    "fact_flag_sensitive",
    "fact_quotes_confirm",
    "fact_reject",
    "fact_review_decide",
    "fact_reveal",
    "fact_set_expiry",
    "fact_unflag_sensitive",
    "fact_upsert",
    "fact_upsert_async",
    "facts_bulk_apply",
    "facts_import",
    "facts_sweep_expired",
    "is_unchanged",
    "load_for_update",
    "lock_subject",
    "matching_rule",
    "memory_settings_update",
    "use_retention_days",
    "use_retention_update",
    "new_receipt_number",
    "policy_changed",
    "policy_history",
    "policy_record",
    "recompute_starter_set",
    "record_event",
    "retention_recompute_chunk",
    "retention_rule_delete",
    "retention_rule_save",
    "row_expiry",
    "rules_after",
    "snapshot",
    "subject_clear",
    "subject_forget",
    "subject_set_legal_hold",
    "subject_set_preferences",
]
