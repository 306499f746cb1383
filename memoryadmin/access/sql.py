"""The access record's hand-written SQL (PostgreSQL), one named constant each."""

# Append-only: no row is ever changed, and rows go only through the retention sweep, which
# says so with `SET LOCAL memoryadmin.access_sweep = 'on'` in its own transaction.
SQL_APPEND_ONLY_FUNCTION = """
CREATE OR REPLACE FUNCTION staff_access_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        RAISE EXCEPTION 'the staff access record is append-only' USING ERRCODE = 'MA002';
    END IF;
    IF coalesce(current_setting('memoryadmin.access_sweep', true), '') <> 'on' THEN
        RAISE EXCEPTION 'staff access rows go only through the retention sweep'
            USING ERRCODE = 'MA002';
    END IF;
    RETURN OLD;
END
$$ LANGUAGE plpgsql
"""

SQL_APPEND_ONLY_TRIGGER = """
CREATE TRIGGER staff_access_append_only
    BEFORE UPDATE OR DELETE ON staff_access
    FOR EACH ROW EXECUTE FUNCTION staff_access_append_only()
"""

SQL_DROP_APPEND_ONLY = """
DROP TRIGGER IF EXISTS staff_access_append_only ON staff_access;
DROP FUNCTION IF EXISTS staff_access_append_only()
"""

SQL_SWEEP_MODE = """
SET LOCAL memoryadmin.access_sweep = 'on'
"""
