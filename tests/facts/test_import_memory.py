"""import_memory / export_memory as an airline moving in would run them: upstream's
JsonFileMemoryStore file, JSON Lines, a second run, refusals reported by subject and key."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import (
    ActorKind,
    EventAction,
    FactEvent,
    FactStatus,
    MemoryFact,
    MemorySettings,
    Origin,
)
from memoryadmin.facts.validation import session_tag

pytestmark = pytest.mark.django_db

TAG = "0123456789ab"
UPSTREAM = {
    "FF-1": [
        {
            "key": "seat_preference",
            "value": "Prefers aisle seats",
            "category": "preference",
            "updated_at": "2025-03-01T10:00:00+00:00",
            "source_session_id": TAG,
        },
        {
            "key": "overnight_flights",
            "value": "Avoids overnight flights",
            "category": "constraint",
            "updated_at": "2025-03-02T10:00:00Z",
            "source_session_id": "raw-session-id-from-upstream",
        },
        {
            "key": "phone",
            "value": "call (010) 555-0100",
            "category": "context",
            "updated_at": "2025-03-03T10:00:00+00:00",
            "source_session_id": None,
        },
    ],
    "FF-2": [
        {
            "key": "travel_party",
            "value": "Usually travels with spouse",
            "category": "context",
            "updated_at": "2025-04-01T08:30:00",
            "source_session_id": TAG,
        },
        {
            "key": "mobility",
            "value": "Uses a wheelchair at airports",
            "category": "constraint",
            "updated_at": "2025-04-02T08:30:00+00:00",
            "source_session_id": TAG,
        },
        {"key": "mood", "value": "!!!", "category": "context"},
    ],
}


def write(tmp_path: Path, data: object, name: str = "memory.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def run_import(path: Path, *args: str) -> str:
    out = StringIO()
    call_command("import_memory", str(path), "--no-progress", *args, stdout=out, stderr=out)
    return out.getvalue()


def facts_of(subject_id: str) -> dict[str, MemoryFact]:
    return {fact.key: fact for fact in MemoryFact.objects.filter(subject_id=subject_id)}


def test_an_upstream_file_is_imported_with_its_times_and_session_tags(tmp_path):
    output = run_import(write(tmp_path, UPSTREAM))

    ff1 = facts_of("FF-1")
    assert set(ff1) == {"seat_preference", "overnight_flights"}
    seat = ff1["seat_preference"]
    assert seat.updated_at == datetime(2025, 3, 1, 10, tzinfo=UTC)
    assert seat.source_session_id == TAG
    assert (seat.origin, seat.status) == (Origin.IMPORT, FactStatus.ACTIVE)
    # a raw session id is never stored: it is hashed the way live writes hash it
    assert ff1["overnight_flights"].source_session_id == session_tag("raw-session-id-from-upstream")
    ff2 = facts_of("FF-2")
    assert ff2["travel_party"].updated_at == datetime(2025, 4, 1, 8, 30, tzinfo=UTC)
    assert ff2["mobility"].status == FactStatus.PENDING_REVIEW  # held like the agent's
    # the agent sees them in the file's order
    assert [f.key for f in selectors.facts_for_agent("FF-1")] == [
        "seat_preference",
        "overnight_flights",
    ]
    events = FactEvent.objects.filter(action=EventAction.CREATED)
    assert events.count() == 4
    assert set(events.values_list("actor_kind", flat=True)) == {ActorKind.SYSTEM}
    assert "4 created" in output and "1 blocked" in output and "1 invalid" in output
    assert "subject FF-1 key phone" in output and "subject FF-2 key mood" in output
    assert "555" not in output and "!!!" not in output


@pytest.mark.parametrize("layout", ["lists", "version 2"])
def test_a_second_import_changes_nothing(tmp_path, layout):
    path = write(tmp_path, UPSTREAM if layout == "lists" else version_2(UPSTREAM))
    run_import(path)
    before = list(MemoryFact.objects.order_by("id").values())
    events = FactEvent.objects.count()

    output = run_import(path)

    assert list(MemoryFact.objects.order_by("id").values()) == before
    assert FactEvent.objects.count() == events
    assert "0 created, 0 updated, 4 unchanged" in output


def test_other_upstream_shapes_are_read(tmp_path):
    keyed = {
        "facts": {"FF-3": {"seat_preference": {"value": "Window", "category": "preference"}}},
        "purge_generations": {"FF-3": 2},
    }
    run_import(write(tmp_path, keyed))
    assert facts_of("FF-3")["seat_preference"].value == "Window"


def test_the_same_fact_twice_in_a_file_keeps_the_last(tmp_path):
    lines = [
        {"subject_id": "FF-4", "key": "seat", "value": "Window", "category": "preference"},
        {"subject_id": "FF-4", "key": "seat", "value": "Aisle", "category": "preference"},
    ]
    path = tmp_path / "dup.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    run_import(path)
    assert facts_of("FF-4")["seat"].value == "Aisle"


def test_a_fact_changed_here_since_the_file_was_written_is_kept(tmp_path):
    services.fact_upsert(
        subject_id="FF-1",
        facts=[services.FactDraft("seat_preference", "Window")],
        actor=Actor.system("live"),
    )
    output = run_import(write(tmp_path, UPSTREAM))
    assert facts_of("FF-1")["seat_preference"].value == "Window"
    assert "1 kept (newer here)" in output


def test_an_older_fact_here_is_updated_with_one_event(tmp_path):
    run_import(
        write(
            tmp_path,
            {"FF-5": [{"key": "seat", "value": "Window", "updated_at": "2024-01-01T00:00:00Z"}]},
        )
    )
    run_import(
        write(
            tmp_path,
            {"FF-5": [{"key": "seat", "value": "Aisle", "updated_at": "2025-01-01T00:00:00Z"}]},
            "b.json",
        )
    )
    seat = facts_of("FF-5")["seat"]
    assert (seat.value, seat.version) == ("Aisle", 2)
    update = FactEvent.objects.get(subject_id="FF-5", action=EventAction.UPDATED)
    assert (update.before["value"], update.after["value"]) == ("Window", "Aisle")


def test_a_traveller_who_paused_learning_gets_nothing_imported(tmp_path):
    services.subject_set_preferences(
        subject_id="FF-1", memory_paused=True, actor=Actor.customer("FF-1")
    )
    output = run_import(write(tmp_path, UPSTREAM))
    assert facts_of("FF-1") == {}
    assert "2 skipped (traveller paused learning)" in output


def test_an_invalid_blocked_pattern_stops_the_import(tmp_path):
    MemorySettings.objects.update_or_create(pk=1, defaults={"blocked_patterns": ["(oops"]})
    with pytest.raises(CommandError):
        run_import(write(tmp_path, UPSTREAM))
    assert not MemoryFact.objects.exists()


def test_a_file_that_is_not_a_memory_file_is_refused(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("[1, 2", encoding="utf-8")
    with pytest.raises(CommandError):
        run_import(path)


def test_export_then_import_elsewhere_gives_the_same_facts(tmp_path):
    run_import(write(tmp_path, UPSTREAM))
    exported = tmp_path / "export.jsonl"
    call_command("export_memory", "--output", str(exported), stderr=StringIO())
    before = sorted(
        MemoryFact.objects.values_list(
            "subject_id", "key", "value", "category", "updated_at", "source_session_id"
        )
    )
    lines = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 4
    assert set(lines[0]) == {
        "subject_id",
        "key",
        "value",
        "category",
        "updated_at",
        "source_session_id",
    }
    for subject_id in ("FF-1", "FF-2"):
        services.subject_clear(subject_id=subject_id, actor=Actor.system("test"))

    run_import(exported)

    after = sorted(
        MemoryFact.objects.values_list(
            "subject_id", "key", "value", "category", "updated_at", "source_session_id"
        )
    )
    assert after == before


def test_one_chunk_costs_a_fixed_number_of_queries_whatever_its_size(
    tmp_path, django_assert_max_num_queries
):
    for size in (20, 400):
        data = {
            f"S-{size}-{n}": [{"key": f"k{i}", "value": f"Value {i}"} for i in range(10)]
            for n in range(size // 10)
        }
        path = write(tmp_path, data, f"{size}.json")
        with django_assert_max_num_queries(14):
            run_import(path, "--chunk-size", "1000")
        imported = MemoryFact.objects.filter(subject__subject_id__startswith=f"S-{size}-")
        assert imported.count() == size


def test_restating_an_expired_fact_revives_it_as_a_live_write_does():
    """The import and the upsert decide "is this a change?" with one function: an expired fact
    restated with the same value is a change (an update that revives it), not "unchanged"."""
    services.fact_upsert(
        subject_id="FF-9", facts=[services.FactDraft("seat", "Aisle")], actor=Actor.system("live")
    )
    services.fact_expire(subject_id="FF-9", key="seat", actor=Actor.system("live"))
    result = services.facts_import(
        facts=[
            services.ImportDraft(
                subject_id="FF-9", key="seat", value="Aisle", updated_at=datetime.now(UTC)
            )
        ],
        actor=Actor.system("import"),
    )
    assert (result.updated, result.unchanged) == (1, 0)
    seat = facts_of("FF-9")["seat"]
    assert (seat.version, seat.expiry_pinned, seat.expires_at) == (3, False, None)
    assert selectors.facts_for_agent("FF-9")[0].value == "Aisle"


# --- issue 20: the file upstream writes today (version 2) ----------------------------------------


def version_2(document: dict[str, list[dict]]) -> dict:
    """UPSTREAM as JsonFileMemoryStore writes it now: facts keyed by key, purge counters."""
    return {
        "version": 2,
        "facts": {
            subject: {fact["key"]: fact for fact in facts} for subject, facts in document.items()
        },
        "purges": {"FF-1": 3, "FF-2": 0, "FF-9": 1},
    }


def test_upstreams_version_2_file_is_read_and_the_purge_counters_are_named(tmp_path):
    path = write(tmp_path, version_2(UPSTREAM))

    output = run_import(path)

    assert "upstream JsonFileMemoryStore, 6 facts" in output
    assert set(facts_of("FF-1")) == {"seat_preference", "overnight_flights"}
    assert set(facts_of("FF-2")) == {"travel_party", "mobility"}
    assert not MemoryFact.objects.filter(subject_id__in=["version", "purges"]).exists()
    assert "Not imported: the purge counters of 2 travellers" in output
    assert "Purge counter skipped: subject FF-1 (3)" in output
    assert "Purge counter skipped: subject FF-9 (1)" in output
    assert "FF-2 (0)" not in output  # a zero counter is nothing lost
    assert selectors.purge_generation("FF-1") == 0


def test_an_unknown_file_version_is_refused_without_writing(tmp_path):
    document = version_2(UPSTREAM) | {"version": 3}
    with pytest.raises(CommandError, match="Unknown upstream file version"):
        run_import(write(tmp_path, document))
    assert not MemoryFact.objects.exists()


def test_full_width_phone_numbers_in_a_file_are_blocked(tmp_path):
    document = {
        "FF-5": [
            {"key": "phone", "value": "０９１２－３４５－６７８"},
            {"key": "mobile", "value": "＋８８６ ９１２ ３４５ ６７８"},
            {"key": "trip", "value": "Flies 2026/09/12 08:30"},
        ]
    }
    output = run_import(write(tmp_path, document))
    assert set(facts_of("FF-5")) == {"trip"}
    assert "2 blocked by the write filter" in output
    assert "３４５" not in output and "345" not in output
