-- The work of one raw statement (bench/scenarios/raw.py RAW_UPSERT, 3 keys: 2 held, 1 new) and of
-- LangGraph's put (its `store` table, schema from langgraph-checkpoint-postgres 3.2.0's MIGRATIONS,
-- one item per fact of memory_fact) on random travellers, EXPLAIN (ANALYZE, BUFFERS, WAL) summed.
-- Usage: psql -d <a database bench/scale.py loaded> -v n=300 -f bench/upsert_peers_work.sql
-- (it runs a CHECKPOINT before counting; the store table is loaded once, from memory_fact)
CREATE TABLE IF NOT EXISTS store (
    prefix text NOT NULL, key text NOT NULL, value jsonb NOT NULL,
    created_at timestamptz DEFAULT CURRENT_TIMESTAMP, updated_at timestamptz DEFAULT CURRENT_TIMESTAMP,
    expires_at timestamptz, ttl_minutes int, PRIMARY KEY (prefix, key));
CREATE INDEX IF NOT EXISTS store_prefix_idx ON store USING btree (prefix text_pattern_ops);
CREATE INDEX IF NOT EXISTS idx_store_expires_at ON store (expires_at) WHERE expires_at IS NOT NULL;
INSERT INTO store (prefix, key, value)
SELECT 'travellers.' || subject_id, key, jsonb_build_object('value', value)
  FROM memory_fact WHERE NOT EXISTS (SELECT 1 FROM store LIMIT 1);
ANALYZE store;
CREATE OR REPLACE FUNCTION pg_temp.work(template text, n int, travellers int)
RETURNS TABLE (hit numeric, read numeric, dirtied numeric, wal_records numeric, fpi numeric, wal_bytes numeric, read_ms numeric)
LANGUAGE plpgsql AS $$
DECLARE plan json; s text; h numeric := 0; r numeric := 0; d numeric := 0; w numeric := 0; f numeric := 0; b numeric := 0; t numeric := 0;
BEGIN
  FOR i IN 1..n LOOP
    s := 'S' || lpad((1 + floor(random() * travellers))::int::text, 8, '0');
    EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, WAL, TIMING off, FORMAT JSON) ' || format(template, s, s, s, i, i) INTO plan;
    h := h + (plan->0->'Plan'->>'Shared Hit Blocks')::numeric;
    r := r + (plan->0->'Plan'->>'Shared Read Blocks')::numeric;
    d := d + (plan->0->'Plan'->>'Shared Dirtied Blocks')::numeric;
    w := w + (plan->0->'Plan'->>'WAL Records')::numeric;
    f := f + (plan->0->'Plan'->>'WAL FPI')::numeric;
    b := b + (plan->0->'Plan'->>'WAL Bytes')::numeric;
    t := t + coalesce((plan->0->'Plan'->>'I/O Read Time')::numeric, 0);  -- track_io_timing on
  END LOOP;
  RETURN QUERY SELECT round(h / n, 2), round(r / n, 2), round(d / n, 2), round(w / n, 2), round(f / n, 2), round(b / n), round(t / n, 3);
END $$;
SELECT count(*) AS travellers FROM memory_subject WHERE subject_id LIKE 'S%' \gset
CHECKPOINT;
SELECT 'raw upsert of 3 (RAW_UPSERT)' AS statement, * FROM pg_temp.work(
 $q$INSERT INTO memory_fact (subject_id, key, value, category, updated_at, source_session_id,
   created_at, origin, status, sensitive, expiry_pinned, version)
   SELECT %1$L, k, v, 'preference', now(), '', now(), 'agent', 'active', false, false, 1
   FROM unnest(ARRAY['topic_6', 'topic_7', 'raw_new_' || %1$L || '_' || %4$s], ARRAY['a', 'b', 'c' || %4$s]) AS r(k, v)
   ON CONFLICT (subject_id, key) DO UPDATE SET value = EXCLUDED.value,
   updated_at = EXCLUDED.updated_at, version = memory_fact.version + 1$q$, :n, :travellers)
UNION ALL
SELECT 'LangGraph put of 3 (abatch)', * FROM pg_temp.work(
 $q$INSERT INTO store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
   VALUES ('travellers.' || %1$L, 'topic_8', '{"value": "x"}', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, NULL, NULL),
          ('travellers.' || %1$L, 'topic_9', '{"value": "y"}', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, NULL, NULL),
          ('travellers.' || %1$L, 'lg_new_' || %4$s, jsonb_build_object('value', 'z' || %4$s), CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, NULL, NULL)
   ON CONFLICT (prefix, key) DO UPDATE SET value = EXCLUDED.value, updated_at = CURRENT_TIMESTAMP,
      expires_at = EXCLUDED.expires_at, ttl_minutes = EXCLUDED.ttl_minutes$q$, :n, :travellers);
