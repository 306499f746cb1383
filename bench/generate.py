"""Fill the benchmark database fast, with COPY (not the ORM): travellers, facts and their history.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/ma_bench python bench/generate.py --preset small

Presets: `small` (10,000 travellers, 100,000 facts, 300,000 events) and `large` (100,000,
1,000,000, 3,000,000). A few heavy travellers hold 500 facts each; the rest share what is left.
Realistic airline topics and categories, English and Traditional Chinese values, ~3% sensitive,
~2% waiting for review, ~25% with a future expiry, a session tag on most. The database must be
migrated first (`manage.py migrate`); the memory tables are emptied before loading.

This is test data for a benchmark, written straight into the tables on purpose: no service, no
audit. Deterministic for a given preset (seeded).

Every event stores the keyed hash of its key (`FactEvent.key_hash`, HMAC with SECRET_KEY): run
this with the SECRET_KEY the app (bench/run.py) will use, or erasure would not find the events.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import psycopg

from memoryadmin.facts.keyhash import key_digest


@dataclass(frozen=True)
class Preset:
    travellers: int
    facts: int
    events: int
    heavy: int  # travellers with HEAVY_FACTS facts each
    server_side: bool = False  # loaded by INSERT ... SELECT generate_series, not COPY


PRESETS = {
    "small": Preset(travellers=10_000, facts=100_000, events=300_000, heavy=5),
    "large": Preset(travellers=100_000, facts=1_000_000, events=3_000_000, heavy=20),
    "tiny": Preset(travellers=500, facts=5_000, events=15_000, heavy=2),  # for tests
    # The peers scenario's three sizes (issue 42): 20k, `large` (1M) and 10M facts. The 10M
    # one is loaded server-side with modest history (one created event for 3M of its facts).
    "20k": Preset(travellers=2_000, facts=20_000, events=60_000, heavy=2),
    "10m": Preset(
        travellers=1_000_000, facts=10_000_000, events=3_000_000, heavy=20, server_side=True
    ),
}
HEAVY_FACTS = 500
HEAVY_PREFIX = "H"

TOPICS: list[tuple[str, str, list[str]]] = [
    (
        "seat_preference",
        "preference",
        ["Prefers aisle seats", "Prefers window seats", "偏好靠走道的座位", "喜歡靠窗的位置"],
    ),
    (
        "meal_preference",
        "preference",
        ["Vegetarian meals", "Asian vegetarian meal", "偏好素食餐", "不吃牛肉"],
    ),
    ("overnight_flight", "constraint", ["Avoids overnight flights", "不搭紅眼航班"]),
    ("connection_limit", "constraint", ["At most one connection", "轉機最多一次"]),
    (
        "travel_party",
        "context",
        ["Usually travels with spouse", "常與家人同行", "Travels with two children"],
    ),
    (
        "home_airport",
        "context",
        ["Flies from Taipei Taoyuan (TPE)", "住在高雄，常從 KHH 出發", "Based near Heathrow"],
    ),
    ("cabin_class", "preference", ["Books premium economy on long haul", "長程偏好商務艙"]),
    ("baggage", "preference", ["Travels with carry-on only", "通常託運一件行李"]),
    ("frequent_route", "context", ["Often flies TPE to NRT", "常飛台北－香港"]),
    ("arrival_time", "constraint", ["Must land before 22:00", "需在晚上十點前抵達"]),
    ("upgrade_interest", "preference", ["Interested in paid upgrades", "願意付費升等"]),
    ("language", "preference", ["Prefers Mandarin-speaking agents", "偏好中文服務"]),
]
SENSITIVE_TOPICS = [
    ("mobility", "constraint", ["Uses a wheelchair at airports", "需要輪椅協助"]),
    ("medical_meal", "constraint", ["Needs a gluten-free meal (coeliac)", "糖尿病餐"]),
]
ACTIONS = ["created", "updated", "updated", "expiry_changed", "approved", "flagged_sensitive"]
ACTORS = [
    ("agent", "prod-agent-host"),
    ("extraction", "extraction"),
    ("staff", "support1"),
    ("customer", "portal"),
]


def heavy_ids(preset: Preset) -> list[str]:
    return [f"{HEAVY_PREFIX}{n:05d}" for n in range(preset.heavy)]


def normal_id(n: int) -> str:
    return f"T{n:07d}"


def tag(n: int) -> str:
    return hashlib.sha256(f"session-{n}".encode()).hexdigest()[:12]


def _facts_for(subject: str, count: int, rng: random.Random, now: datetime):
    """(key, value, category, status, sensitive, expires_at, created_at, updated_at, tag)."""
    for index in range(count):
        if rng.random() < 0.03:
            base, category, values = rng.choice(SENSITIVE_TOPICS)
            sensitive = True
            key = f"{base}_{index}"
        else:
            base, category, values = TOPICS[index % len(TOPICS)]
            sensitive = False
            key = base if index < len(TOPICS) else f"{base}_{index}"
        value = rng.choice(values) + ("" if index < len(TOPICS) else f" (note {index})")
        status = "pending_review" if rng.random() < 0.02 else "active"
        created = now - timedelta(days=rng.randint(30, 700), seconds=index)
        updated = created + timedelta(days=rng.randint(0, 25))
        expires = now + timedelta(days=rng.randint(30, 365)) if rng.random() < 0.25 else None
        yield (
            key,
            value,
            category,
            status,
            sensitive,
            expires,
            created,
            updated,
            tag(rng.randint(0, 10**6)) if rng.random() < 0.9 else "",
        )


def _secret() -> str:
    """The app's SECRET_KEY: Django's when configured (bench/run.py), else the environment's."""
    from django.conf import settings

    if settings.configured:
        return settings.SECRET_KEY
    secret = os.environ.get("SECRET_KEY", "")
    if not secret:
        raise SystemExit(
            "generate.py: set SECRET_KEY to the one bench/run.py will run with (every event "
            "stores a keyed hash of its key; with another secret, erasure would not find them)"
        )
    return secret


def load(conninfo: str, preset: Preset, *, seed: int = 12) -> dict[str, float]:
    if preset.server_side:
        return load_server_side(conninfo, preset)
    rng = random.Random(seed)
    secret = _secret()
    now = datetime.now(UTC)
    started = time.perf_counter()
    heavy = heavy_ids(preset)
    normal = preset.travellers - len(heavy)
    rest = preset.facts - HEAVY_FACTS * len(heavy)
    base, extra = divmod(rest, normal)
    with psycopg.connect(conninfo, autocommit=False) as conn:
        conn.execute(
            "TRUNCATE memory_fact, memory_fact_event, memory_subject RESTART IDENTITY CASCADE"
        )
        with conn.cursor().copy(
            "COPY memory_subject (subject_id, purge_generation, memory_paused, memory_use_paused,"
            " legal_hold, created_at, updated_at) FROM STDIN"
        ) as copy:
            for subject in heavy + [normal_id(n) for n in range(normal)]:
                copy.write_row((subject, 0, False, False, False, now, now))
        facts_written = 0
        keys_by_subject: list[tuple[str, str, str]] = []  # sampled, for events
        with conn.cursor().copy(
            "COPY memory_fact (subject_id, key, value, category, status, sensitive, expires_at,"
            " created_at, updated_at, source_session_id, origin, expiry_pinned, version)"
            " FROM STDIN"
        ) as copy:
            plan = [(s, HEAVY_FACTS) for s in heavy] + [
                (normal_id(n), base + (1 if n < extra else 0)) for n in range(normal)
            ]
            for subject, count in plan:
                for row in _facts_for(subject, count, rng, now):
                    key, value = row[0], row[1]
                    copy.write_row((subject, *row, "extraction", False, 1))
                    facts_written += 1
                    if len(keys_by_subject) < preset.events:
                        keys_by_subject.append((subject, key, value))
        events_written = 0
        with conn.cursor().copy(
            "COPY memory_fact_event (subject_id, key, key_hash, action, actor_kind, actor_label,"
            " reason, before, after, session_tag, created_at) FROM STDIN"
        ) as copy:
            per_fact, spare = divmod(preset.events, max(1, len(keys_by_subject)))
            for index, (subject, key, value) in enumerate(keys_by_subject):
                key_hash = key_digest(subject, key, secret=secret)
                for step in range(per_fact + (1 if index < spare else 0)):
                    action = "created" if step == 0 else rng.choice(ACTIONS[1:])
                    kind, label = rng.choice(ACTORS)
                    after = json.dumps({"value": value, "version": step + 1})
                    before = None if step == 0 else after
                    created = now - timedelta(days=400 - step, seconds=index)
                    copy.write_row(
                        (
                            subject,
                            key,
                            key_hash,
                            action,
                            kind,
                            label,
                            "generated",
                            before,
                            after,
                            tag(index),
                            created,
                        )
                    )
                    events_written += 1
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE memory_subject")
        conn.execute("VACUUM ANALYZE memory_fact")
        conn.execute("VACUUM ANALYZE memory_fact_event")
    return {
        "travellers": preset.travellers,
        "facts": facts_written,
        "events": events_written,
        "seconds": time.perf_counter() - started,
    }


# The server-side load (a preset with `server_side`): the same shapes as `_facts_for` (a
# traveller's k-th fact takes the k-th topic, its values, ~3% sensitive, ~2% waiting for review,
# ~25% expiring, a session tag on 90%), chosen by arithmetic on (traveller, k) instead of a
# seeded generator, in one INSERT ... SELECT per chunk of travellers.
SERVER_CHUNK = 100_000  # travellers per INSERT
SQL_SERVER_SUBJECTS = """
INSERT INTO memory_subject (subject_id, purge_generation, memory_paused, memory_use_paused,
                            legal_hold, created_at, updated_at)
SELECT id, 0, false, false, false, now(), now() FROM unnest(%(ids)s::text[]) AS id
"""
SQL_SERVER_FACTS = """
INSERT INTO memory_fact (subject_id, key, value, category, status, sensitive, expires_at,
                         created_at, updated_at, source_session_id, origin, expiry_pinned, version)
SELECT f.subject, f.key, f.value, f.category,
       CASE WHEN f.h %% 50 = 7 THEN 'pending_review' ELSE 'active' END, f.sensitive,
       CASE WHEN f.h %% 4 = 1 THEN now() + make_interval(days => 30 + f.h %% 335) END,
       now() - make_interval(days => 30 + f.h %% 670, secs => f.k),
       now() - make_interval(days => 30 + f.h %% 670, secs => f.k)
             + make_interval(days => f.h %% 26),
       CASE WHEN f.h %% 10 = 3 THEN '' ELSE left(md5('session-' || f.h %% 1000000), 12) END,
       'extraction', false, 1
FROM (
    SELECT s.subject, s.k, s.h, s.sensitive,
           CASE WHEN s.sensitive THEN sens.base || '_' || s.k
                WHEN s.k < %(topics)s THEN t.base ELSE t.base || '_' || s.k END AS key,
           CASE WHEN s.sensitive THEN sens.vals[1 + s.h %% cardinality(sens.vals)]
                ELSE t.vals[1 + s.h %% cardinality(t.vals)] END
           || CASE WHEN s.k < %(topics)s THEN '' ELSE ' (note ' || s.k || ')' END AS value,
           CASE WHEN s.sensitive THEN sens.category ELSE t.category END AS category
    FROM (
        SELECT p.subject, k, h, h %% 100 < 3 AS sensitive
        FROM (SELECT * FROM unnest(%(ids)s::text[], %(counts)s::int[]) AS p(subject, n)) AS p,
             generate_series(0, p.n - 1) AS k,
             LATERAL (SELECT abs(hashtext(p.subject || '/' || k)) AS h) AS hh
    ) AS s
    JOIN unnest(%(bases)s::text[], %(categories)s::text[], %(values)s::text[])
         WITH ORDINALITY AS t0(base, category, vals, i) ON t0.i = 1 + s.k %% %(topics)s
    CROSS JOIN LATERAL (SELECT t0.base, t0.category,
                               string_to_array(t0.vals, '|') AS vals) AS t
    JOIN unnest(%(sbases)s::text[], %(scategories)s::text[], %(svalues)s::text[])
         WITH ORDINALITY AS s0(base, category, vals, i) ON s0.i = 1 + s.h %% 2
    CROSS JOIN LATERAL (SELECT s0.base, s0.category,
                               string_to_array(s0.vals, '|') AS vals) AS sens
) AS f
"""
# One created event per fact for the first `events` facts, under the fact's keyed hash computed
# by the server: HMAC-SHA256 with the key keyhash derives from SECRET_KEY, written out with the
# built-in sha256() (RFC 2104: the key's inner and outer pads come from Python), so no extension
# is needed (the embedded PostgreSQL has no pgcrypto).
SQL_SERVER_EVENTS = """
INSERT INTO memory_fact_event (subject_id, key, key_hash, action, actor_kind, actor_label,
                               reason, before, after, session_tag, created_at)
SELECT f.subject_id, f.key,
       '#' || left(encode(sha256(%(outer)s::bytea || sha256(
                   %(inner)s::bytea || convert_to(f.subject_id, 'UTF8') || '\\x00'::bytea
                   || convert_to(f.key, 'UTF8'))), 'hex'), 40),
       'created', 'extraction', 'extraction', 'generated', NULL,
       jsonb_build_object('value', f.value, 'version', 1), '', f.created_at
FROM (SELECT subject_id, key, value, created_at FROM memory_fact ORDER BY id
      LIMIT %(events)s) AS f
"""
SQL_SERVER_INDEXES = """
SELECT indexname, indexdef FROM pg_indexes
WHERE schemaname = current_schema() AND tablename IN ('memory_fact', 'memory_fact_event')
  AND indexname NOT IN (SELECT conname FROM pg_constraint
                        WHERE conrelid IN ('memory_fact'::regclass, 'memory_fact_event'::regclass))
ORDER BY indexname
"""


def load_server_side(conninfo: str, preset: Preset) -> dict[str, float]:
    """Load a large preset server-side: secondary indexes dropped first and made again from
    their saved definitions after (one sort each instead of an insert per row)."""
    from hashlib import sha256

    from memoryadmin.facts.keyhash import _DIGEST_SALT

    secret = _secret()
    started = time.perf_counter()
    heavy = heavy_ids(preset)
    normal = preset.travellers - len(heavy)
    rest = preset.facts - HEAVY_FACTS * len(heavy)
    base, extra = divmod(rest, normal)
    topics = {
        "topics": len(TOPICS),
        "bases": [t[0] for t in TOPICS],
        "categories": [t[1] for t in TOPICS],
        "values": ["|".join(t[2]) for t in TOPICS],
        "sbases": [t[0] for t in SENSITIVE_TOPICS],
        "scategories": [t[1] for t in SENSITIVE_TOPICS],
        "svalues": ["|".join(t[2]) for t in SENSITIVE_TOPICS],
    }
    plan = [(s, HEAVY_FACTS) for s in heavy] + [
        (normal_id(n), base + (1 if n < extra else 0)) for n in range(normal)
    ]
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            "TRUNCATE memory_fact, memory_fact_event, memory_subject RESTART IDENTITY CASCADE"
        )
        saved = conn.execute(SQL_SERVER_INDEXES).fetchall()
        for name, _ in saved:
            conn.execute(f'DROP INDEX "{name}"')
        for start in range(0, len(plan), SERVER_CHUNK):
            chunk = plan[start : start + SERVER_CHUNK]
            ids = [s for s, _ in chunk]
            conn.execute(SQL_SERVER_SUBJECTS, {"ids": ids})
            conn.execute(SQL_SERVER_FACTS, {"ids": ids, "counts": [n for _, n in chunk], **topics})
            print(f"  travellers {start + len(chunk):,}: {time.perf_counter() - started:.0f} s")
        derived = sha256((_DIGEST_SALT + secret).encode()).digest().ljust(64, b"\0")
        pads = {
            "inner": bytes(b ^ 0x36 for b in derived),
            "outer": bytes(b ^ 0x5C for b in derived),
        }
        conn.execute(SQL_SERVER_EVENTS, {**pads, "events": preset.events})
        print(f"  events: {time.perf_counter() - started:.0f} s")
        conn.execute("SET maintenance_work_mem = '1GB'")
        for _, definition in saved:
            conn.execute(definition.replace(" ON ONLY ", " ON ", 1))
        print(f"  indexes: {time.perf_counter() - started:.0f} s")
        conn.execute("VACUUM ANALYZE memory_subject")
        conn.execute("VACUUM ANALYZE memory_fact")
        conn.execute("VACUUM ANALYZE memory_fact_event")
        facts = conn.execute("SELECT count(*) FROM memory_fact").fetchone()[0]
        events = conn.execute("SELECT count(*) FROM memory_fact_event").fetchone()[0]
    return {
        "travellers": preset.travellers,
        "facts": facts,
        "events": events,
        "seconds": time.perf_counter() - started,
    }


def facts_loaded(conninfo: str) -> int:
    """How many facts the database holds (a loaded preset is reused)."""
    with psycopg.connect(conninfo) as conn:
        return conn.execute("SELECT count(*) FROM memory_fact").fetchone()[0]


def conninfo_from_env() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        raise SystemExit("bench needs PostgreSQL: set DATABASE_URL=postgres://...")
    return url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    args = parser.parse_args()
    result = load(conninfo_from_env(), PRESETS[args.preset])
    print(
        f"loaded {result['travellers']:,} travellers, {result['facts']:,} facts, "
        f"{result['events']:,} events in {result['seconds']:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
