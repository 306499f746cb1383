"""The guard of `services.job_succeed`: a function that raises when the job's end matched no row.

Ending a job and writing its facts commit together or not at all. With the guard, the statement
that ends the job refuses by an error (SQLSTATE MA001) instead of by returning no row, so it can
be sent in one round trip with the facts' writes and the COMMIT: the error cancels the COMMIT.

The subject_id index (and its LIKE twin) goes: every job lookup by traveller is served by the
unique (subject_id, session_tag, turn_id) index, and each index is written on every change of
a job's status, twice a turn.
"""

from django.db import migrations, models

CREATE = """
CREATE OR REPLACE FUNCTION extraction_job_must_end(ended boolean, job bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT ended THEN
        RAISE EXCEPTION USING ERRCODE = 'MA001', MESSAGE = 'extraction job ' || job
            || ' was not ended: its traveller''s memory was cleared during extraction,'
            || ' or another delivery finished it first';
    END IF;
    RETURN true;
END
$$
"""
DROP = "DROP FUNCTION IF EXISTS extraction_job_must_end(boolean, bigint)"


def _run(statement):
    def run(apps, schema_editor):
        schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("extraction", "0002_job_delivery")]

    operations = [
        migrations.RunPython(_run(CREATE), _run(DROP)),
        migrations.AlterField(
            model_name="extractionjob",
            name="subject_id",
            field=models.CharField(max_length=128),
        ),
    ]
