-- The structures an upsert touches (bench/upsert_work.py; RESULTS.md "Where the upsert's growth goes"):
-- psql -d <a database bench/scale.py loaded> -f bench/upsert_structure.sql
CREATE EXTENSION IF NOT EXISTS pageinspect;
-- every index an upsert's statements may touch: memory_subject, memory_fact, and the current month's partition of the history
SELECT i.indrelid::regclass AS "table", c.relname AS "index", am.amname AS am,
       pg_relation_size(c.oid) / 8192 AS pages,
       CASE WHEN am.amname = 'btree' THEN (bt_metap(c.relname)).level END AS btree_level,
       pg_get_expr(i.indpred, i.indrelid) IS NOT NULL AS partial
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
 WHERE i.indrelid IN ('memory_subject'::regclass, 'memory_fact'::regclass,
                      (SELECT inhrelid FROM pg_inherits JOIN pg_class p ON p.oid = inhrelid
                        WHERE inhparent = 'memory_fact_event'::regclass
                          AND p.relname = 'memory_fact_event_y' || to_char(now(), 'YYYY"m"MM')))
 ORDER BY 1, 2;
SELECT c.relname, c.reltuples::bigint AS rows, pg_relation_size(c.oid) / 8192 AS heap_pages
  FROM pg_class c WHERE c.relname IN ('memory_subject', 'memory_fact', 'memory_fact_event_y' || to_char(now(), 'YYYY"m"MM'));
SELECT count(*) AS partitions_of_memory_fact_event FROM pg_inherits WHERE inhparent = 'memory_fact_event'::regclass;
SELECT count(*) AS indexes_on_the_current_partition FROM pg_index WHERE indrelid = ('memory_fact_event_y' || to_char(now(), 'YYYY"m"MM'))::regclass;
SELECT pending_head <> 4294967295 AS has_pending, n_pending_pages, n_pending_tuples, n_total_pages, n_entry_pages, n_data_pages, n_entries FROM gin_metapage_info(get_raw_page('memory_fact_value_trgm', 0));
SHOW gin_pending_list_limit;
