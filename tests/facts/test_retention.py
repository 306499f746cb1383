"""Retention rules: precedence, TTLs, ties refused, the same answer in Python and in SQL, and a
preview whose numbers are what the change then does (16,000 facts, over 10,000 governed)."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from memoryadmin.facts import retention, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import (
    FactEvent,
    MemoryFact,
    PolicyAction,
    PolicyEvent,
    RetentionRule,
    RetentionRun,
    RunStatus,
)
from memoryadmin.facts.services import FactDraft, RuleProposal
from tests.support.bulk import Row, load_facts

pytestmark = pytest.mark.django_db
ADMIN = Actor.system("privacy-admin-test")


def rule(pk, *, category="", key_glob="", sensitive=None, ttl_days=30, name=None):
    return RetentionRule(
        pk=pk,
        name=name or f"rule {pk}",
        category=category,
        key_glob=key_glob,
        sensitive=sensitive,
        ttl_days=ttl_days,
    )


RULES = [
    rule(1, ttl_days=365, name="everything"),
    rule(2, category="context", ttl_days=90, name="context"),
    rule(3, sensitive=True, ttl_days=10, name="sensitive"),
    rule(4, category="context", sensitive=True, ttl_days=5, name="sensitive context"),
    rule(5, key_glob="meal_*", ttl_days=None, name="meals forever"),
    rule(6, category="preference", key_glob="seat_?", ttl_days=7, name="seat letters"),
]


def winner(key, category="preference", sensitive=False):
    found = retention.winning_rule(RULES, key=key, category=category, sensitive=sensitive)
    return found.name if found else None


def test_precedence_key_glob_then_category_then_sensitivity():
    assert winner("seat_preference") == "everything"
    assert winner("travel_party", "context") == "context"
    assert winner("health_note", "preference", True) == "sensitive"
    assert winner("health_note", "context", True) == "sensitive context"
    assert winner("meal_choice", "context", True) == "meals forever"  # a glob outranks all
    assert winner("seat_a") == "seat letters"
    assert winner("seat_ab") == "everything"  # ? is exactly one character
    assert winner("seat_a", "constraint") == "everything"


def test_keep_until_deleted_gives_no_expiry_and_no_rule_gives_none():
    now = timezone.now()
    assert retention.expiry_for(RULES[4], now) is None
    assert retention.expiry_for(None, now) is None
    assert retention.expiry_for(RULES[1], now) == now + timedelta(days=90)


def test_the_sql_expression_agrees_with_python_for_every_combination():
    keys = ["meal_choice", "seat_a", "seat_ab", "travel_party", "health_note"]
    for category in ("preference", "constraint", "context"):
        for sensitive in (False, True):
            subject = f"grid-{category}-{sensitive}"
            services.fact_upsert(
                subject_id=subject,
                facts=[FactDraft(key, f"Value for {key}", category) for key in keys],
                actor=Actor.system("test"),
            )
            if sensitive:
                for key in keys:
                    services.fact_flag_sensitive(subject_id=subject, key=key, actor=ADMIN)
    expected = {
        fact.pk: retention.expiry_for(
            retention.winning_rule(
                RULES, key=fact.key, category=fact.category, sensitive=fact.sensitive
            ),
            fact.updated_at,
        )
        for fact in MemoryFact.objects.all()
    }
    computed = dict(
        MemoryFact.objects.annotate(e=retention.expiry_expression(RULES)).values_list("pk", "e")
    )
    assert computed == expected and len(expected) == 30


@pytest.mark.parametrize(
    ("first", "second", "overlap"),
    [
        ("meal_*", "meal_*", True),
        ("meal_*", "*_choice", True),
        ("meal_*", "seat_*", False),
        ("seat_?", "seat_ab", False),
        ("seat_?", "seat_a", True),
        ("*", "x", True),
        ("a*b", "*c", False),
        ("a*b*c", "*b*", True),
    ],
)
def test_glob_overlap(first, second, overlap):
    assert retention.globs_overlap(first, second) is overlap
    assert retention.globs_overlap(second, first) is overlap


def save(**fields):
    fields.setdefault("name", "a rule")
    fields.setdefault("category", "")
    fields.setdefault("key_glob", "")
    fields.setdefault("sensitive", None)
    fields.setdefault("ttl_days", 30)
    return services.retention_rule_save(
        proposal=RuleProposal(**fields), actor=ADMIN, reason="policy review"
    )


def test_rules_that_would_tie_are_refused_on_save():
    save(name="context", category="context", ttl_days=90)
    with pytest.raises(ValidationError, match="would tie with “context”"):
        save(name="context again", category="context", ttl_days=30)
    save(name="meals", key_glob="meal_*", ttl_days=None)
    with pytest.raises(ValidationError, match="tie"):
        save(name="choices", key_glob="*_choice")
    save(name="seats", key_glob="seat_*")  # no key matches both meal_* and seat_*
    save(name="prefs", category="preference")  # another category: no tie
    save(name="sensitive context", category="context", sensitive=True)  # more precise
    assert RetentionRule.objects.count() == 5
    # Editing a rule does not tie with itself.
    rule_id = RetentionRule.objects.get(name="context").pk
    save(pk=rule_id, name="context", category="context", ttl_days=60)
    assert RetentionRule.objects.get(pk=rule_id).ttl_days == 60


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"key_glob": "meal[abc]"}, "key_glob"),
        ({"key_glob": "Meal *"}, "key_glob"),
        ({"ttl_days": 0}, "ttl_days"),
        ({"name": ""}, "name"),
        ({"category": "mood"}, "category"),
    ],
)
def test_a_bad_rule_is_refused_with_a_field_message(fields, field):
    with pytest.raises(ValidationError) as caught:
        save(**fields)
    assert field in caught.value.message_dict
    assert not RetentionRule.objects.exists()


def test_saving_a_rule_needs_a_reason_and_is_audited_with_before_and_after():
    with pytest.raises(ValidationError, match="Say why"):
        services.retention_rule_save(
            proposal=RuleProposal("r", "", "", None, 30), actor=ADMIN, reason="  "
        )
    created, run = save(name="short", ttl_days=30)
    save(pk=created.pk, name="short", ttl_days=10)
    services.retention_rule_delete(rule_id=created.pk, actor=ADMIN, reason="not needed")
    events = list(PolicyEvent.objects.order_by("id"))
    assert [e.action for e in events] == [
        PolicyAction.RULE_CREATED,
        PolicyAction.RULE_UPDATED,
        PolicyAction.RULE_DELETED,
    ]
    assert events[1].before["ttl_days"] == 30 and events[1].after["ttl_days"] == 10
    assert events[2].after is None and events[2].reason == "not needed"
    assert all(e.actor_label == "privacy-admin-test" for e in events)


# --- recomputation and preview -----------------------------------------------------------------

CATEGORIES = ("preference", "constraint", "context")
KEYS = ("meal_choice", "meal_time", "seat_a", "seat_window", "travel_party", "health_note")


@pytest.fixture
def many_facts(django_capture_on_commit_callbacks):
    """16,000 facts with spread-out ages, categories, keys and sensitivity; some travellers on
    legal hold, some expiries pinned by staff. Expiries first set by the rules below."""
    randomizer = random.Random(10)
    now = timezone.now()
    rows = []
    for n in range(16_000):
        rows.append(
            Row(
                subject_id=f"bulk-{n // 6:05d}",
                key=f"{KEYS[n % 6]}" if n % 4 else f"{KEYS[n % 6]}_{n}",
                value=f"Bulk value {n}",
                category=CATEGORIES[randomizer.randrange(3)],
                sensitive=randomizer.random() < 0.2,
                updated_at=now - timedelta(days=randomizer.randrange(0, 200), hours=1),
                expires_at=now + timedelta(days=3) if n % 97 == 0 else None,
                expiry_pinned=n % 97 == 0,
            )
        )
    load_facts(rows, held=[f"bulk-{n:05d}" for n in range(0, 2000, 50)])
    with django_capture_on_commit_callbacks(execute=True):  # recompute and sweep, eagerly
        save(name="everything", ttl_days=365)
        save(name="context", category="context", ttl_days=120)
        save(name="sensitive", sensitive=True, ttl_days=60)
    return now


def classify(old, new, now):
    if new is not None and new <= now and (old is None or old > now):
        return "expire_now"
    if new is not None and new > now and (old is None or new < old):
        return "shorten"
    if old is not None and (new is None or new > old):
        return "lengthen"
    return "unchanged"


def test_the_preview_is_exactly_what_the_change_then_does(
    many_facts, django_capture_on_commit_callbacks
):
    now = many_facts
    before = dict(MemoryFact.objects.values_list("pk", "expires_at"))
    held_or_pinned = set(
        MemoryFact.objects.filter(expiry_pinned=True).values_list("pk", flat=True)
    ) | set(MemoryFact.objects.filter(subject__legal_hold=True).values_list("pk", flat=True))
    context_rule = RetentionRule.objects.get(name="context")
    proposal = RuleProposal(
        pk=context_rule.pk,
        name="context",
        category="context",
        key_glob="",
        sensitive=None,
        ttl_days=30,
    )
    extra = RuleProposal(
        name="meals", category="", key_glob="meal_*", sensitive=None, ttl_days=None
    )

    first = retention.preview(retention.rules_after(proposal=proposal), now=now)
    with django_capture_on_commit_callbacks(execute=True):  # the recompute, then the sweep
        _, run = services.retention_rule_save(proposal=proposal, actor=ADMIN, reason="shorter")
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.done == run.total == first.governed
    middle = dict(MemoryFact.objects.values_list("pk", "expires_at"))
    second = retention.preview(retention.rules_after(proposal=extra), now=now)
    with django_capture_on_commit_callbacks(execute=True):
        services.retention_rule_save(proposal=extra, actor=ADMIN, reason="meals kept")
    after = dict(MemoryFact.objects.values_list("pk", "expires_at"))

    for preview, old, new in ((first, before, middle), (second, middle, after)):
        observed = {"expire_now": 0, "shorten": 0, "lengthen": 0, "unchanged": 0}
        for pk, old_expiry in old.items():
            if pk in held_or_pinned:
                assert new.get(pk) == old_expiry  # held travellers and pinned dates untouched
                continue
            if pk not in new:  # erased by the sweep the change started: it expired now
                observed["expire_now"] += 1
            else:
                observed[classify(old_expiry, new[pk], now)] += 1
        assert observed == {
            "expire_now": preview.expire_now,
            "shorten": preview.shorten,
            "lengthen": preview.lengthen,
            "unchanged": preview.unchanged,
        }
    assert first.expire_now > 1000 and first.shorten > 500 and second.lengthen > 1000
    assert first.governed >= 10_000


def test_a_newer_rule_change_supersedes_a_running_recompute(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    first = RetentionRun.objects.create(total=0)
    second = RetentionRun.objects.create(total=0)
    assert services.retention_recompute_chunk(run_id=first.pk).status == RunStatus.SUPERSEDED
    assert services.retention_recompute_chunk(run_id=second.pk).status == RunStatus.DONE


# --- legal hold -------------------------------------------------------------------------------


def test_legal_hold_is_audited_needs_a_reason_and_lifting_it_recomputes(
    django_capture_on_commit_callbacks,
):
    services.fact_upsert(
        subject_id="held-1", facts=[FactDraft("seat", "Aisle")], actor=Actor.system("t")
    )
    with pytest.raises(Exception, match="reason"):
        services.subject_set_legal_hold(subject_id="held-1", hold=True, actor=ADMIN, reason="")
    services.subject_set_legal_hold(
        subject_id="held-1", hold=True, actor=ADMIN, reason="case 2026-114"
    )
    with django_capture_on_commit_callbacks(execute=True):
        save(name="everything", ttl_days=30)  # the recompute skips the held traveller
    assert MemoryFact.objects.get(subject_id="held-1").expires_at is None
    services.subject_set_legal_hold(subject_id="held-1", hold=False, actor=ADMIN, reason="closed")
    fact = MemoryFact.objects.get(subject_id="held-1")
    assert fact.expires_at == fact.updated_at + timedelta(days=30)
    actions = list(
        FactEvent.objects.filter(subject_id="held-1", key="")
        .order_by("id")
        .values_list("action", "reason")
    )
    assert actions == [("legal_hold_placed", "case 2026-114"), ("legal_hold_lifted", "closed")]
