"""The baselines' raw SQL: what each operation of the store would cost as one bare statement."""

RAW_READ = (
    "SELECT key, value, category, updated_at, source_session_id FROM memory_fact"
    " WHERE subject_id = %s AND status = 'active' AND (expires_at IS NULL OR expires_at > now())"
    " ORDER BY created_at, id"
)
RAW_TIER_ONE = (
    "SELECT key, value, category, updated_at, source_session_id FROM memory_fact"
    " WHERE subject_id = %s AND status = 'active' AND NOT sensitive"
    " AND (expires_at IS NULL OR expires_at > now()) ORDER BY category <> 'constraint',"
    " updated_at DESC LIMIT 8"
)
RAW_SEARCH = (
    "SELECT key, value, category, updated_at, source_session_id FROM memory_fact"
    " WHERE subject_id = %s AND status = 'active' AND (expires_at IS NULL OR expires_at > now())"
    " AND (lower(value) LIKE %s OR lower(key) LIKE %s)"
)
# The peers scenario's search (issue 42): any fact whose value or key holds the word, case
# aside, in stored order; one statement on the bare table (no trigram index serves a pattern
# this short inside one traveller's rows: the subject's index finds them).
RAW_SEARCH_PEERS = (
    "SELECT key, value, category, updated_at, source_session_id FROM memory_fact"
    " WHERE subject_id = %s AND status = 'active' AND (expires_at IS NULL OR expires_at > now())"
    " AND (value ILIKE %s OR key ILIKE %s) ORDER BY created_at, id"
)
SWEEP_EVENTS_FLOOR = (
    "INSERT INTO memory_fact_event (subject_id, key, key_hash, action, actor_kind, actor_label,"
    " reason, session_tag, created_at) SELECT subject_id, '#' || md5(key), '#' || md5(key),"
    " 'deleted', 'retention', 'retention rule', 'Expired under the retention policy.', '', now()"
    " FROM memory_fact WHERE expires_at <= now()"
)
RAW_UPSERT = (
    "INSERT INTO memory_fact (subject_id, key, value, category, updated_at, source_session_id,"
    " created_at, origin, status, sensitive, expiry_pinned, version)"
    " SELECT %s, k, v, 'preference', now(), '', now(), 'agent', 'active', false, false, 1"
    " FROM unnest(%s::text[], %s::text[]) AS r(k, v)"
    " ON CONFLICT (subject_id, key) DO UPDATE SET value = EXCLUDED.value,"
    " updated_at = EXCLUDED.updated_at, version = memory_fact.version + 1"
)
