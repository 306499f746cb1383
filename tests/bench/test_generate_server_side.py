"""bench/generate.py's server-side load (the peers scenario's 10M preset, issue 42), at a tiny
size: the preset's travellers and facts, the same shapes as the COPY load, each event under the
keyed hash erasure looks for, and every index made again."""

from __future__ import annotations

import dataclasses

import psycopg
import pytest

from bench import generate
from memoryadmin.db import replicas
from memoryadmin.facts.keyhash import key_digest

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_server_side_load_writes_the_preset_with_keyed_hashes_and_its_indexes():
    preset = dataclasses.replace(generate.PRESETS["tiny"], events=700, server_side=True)
    conninfo = psycopg.conninfo.make_conninfo(**replicas.conninfo("default"))
    with psycopg.connect(conninfo) as conn:
        indexes = set(conn.execute("SELECT indexname FROM pg_indexes").fetchall())
    loaded = generate.load(conninfo, preset)
    assert (loaded["facts"], loaded["events"]) == (preset.facts, preset.events)
    with psycopg.connect(conninfo) as conn:
        assert set(conn.execute("SELECT indexname FROM pg_indexes").fetchall()) == indexes
        subjects = conn.execute("SELECT count(*) FROM memory_subject").fetchone()[0]
        assert subjects == preset.travellers
        heavy = generate.heavy_ids(preset)[0]
        assert (
            conn.execute(
                "SELECT count(*) FROM memory_fact WHERE subject_id = %s", [heavy]
            ).fetchone()[0]
            == generate.HEAVY_FACTS
        )
        shares = conn.execute(
            "SELECT avg(sensitive::int), avg((status = 'pending_review')::int),"
            " avg((expires_at IS NOT NULL)::int), count(DISTINCT category) FROM memory_fact"
        ).fetchone()
        assert 0.01 < shares[0] < 0.06 and 0.005 < shares[1] < 0.05
        assert 0.15 < shares[2] < 0.35 and shares[3] == 3
        events = conn.execute("SELECT subject_id, key, key_hash FROM memory_fact_event").fetchall()
    assert events and all(key_digest(s, k) == h for s, k, h in events)
