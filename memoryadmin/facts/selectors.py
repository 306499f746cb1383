"""Every read the agent, the API and the pages need. Each one is a fixed number of queries."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from .erasure import history_keys
from .models import Category, FactEvent, FactStatus, MemoryFact, MemorySettings, Subject


def memory_settings() -> MemorySettings:
    """The singleton, created with defaults on first use."""
    row, _ = MemorySettings.objects.get_or_create(pk=1)
    return row


def subject_get(subject_id: str) -> Subject | None:
    return Subject.objects.filter(subject_id=subject_id).first()


def purge_generation(subject_id: str) -> int:
    """0 for a subject never purged (or never seen)."""
    value = Subject.objects.filter(subject_id=subject_id).values_list("purge_generation", flat=True)
    return next(iter(value), 0)


def _agent_visible(subject_id: str) -> QuerySet[MemoryFact]:
    now = timezone.now()
    return MemoryFact.objects.filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now),
        subject_id=subject_id,
        status=FactStatus.ACTIVE,
        subject__memory_use_paused=False,
    )


def facts_for_agent(subject_id: str) -> list[MemoryFact]:
    """What the agent may use: active, unexpired, reviewed; nothing if the traveller paused use."""
    return list(_agent_visible(subject_id).order_by("-updated_at", "key"))


def fact_for_agent(subject_id: str, key: str) -> MemoryFact | None:
    return _agent_visible(subject_id).filter(key=key).first()


def select_tier_one(facts: list[MemoryFact], cap: int) -> list[MemoryFact]:
    """All non-sensitive constraints (they may exceed the cap), then the newest others."""
    usable = [fact for fact in facts if not fact.sensitive]
    usable.sort(key=lambda fact: fact.updated_at, reverse=True)
    constraints = [fact for fact in usable if fact.category == Category.CONSTRAINT]
    others = [fact for fact in usable if fact.category != Category.CONSTRAINT]
    return constraints + others[: max(0, cap - len(constraints))]


def tier_one(subject_id: str, *, cap: int | None = None) -> list[MemoryFact]:
    """What the agent injects into every turn."""
    if cap is None:
        cap = memory_settings().tier_one_cap
    return select_tier_one(facts_for_agent(subject_id), cap)


def match_facts(facts: list[MemoryFact], query: str) -> list[MemoryFact]:
    """Upstream search: any lower-cased whitespace-separated term is a substring of
    "{key} {value} {category}". An empty query matches everything."""
    terms = query.lower().split()
    if not terms:
        return list(facts)
    return [
        fact
        for fact in facts
        if any(term in f"{fact.key} {fact.value} {fact.category}".lower() for term in terms)
    ]


def facts_search(subject_id: str, query: str) -> list[MemoryFact]:
    """Recall on demand; sensitive (approved) facts are found here, never in tier one."""
    return match_facts(facts_for_agent(subject_id), query)


def subject_facts(subject_id: str) -> list[MemoryFact]:
    """Every fact held about a traveller, pending and expired included (staff and portal)."""
    return list(MemoryFact.objects.filter(subject_id=subject_id).order_by("category", "key"))


def fact_history(subject_id: str, key: str) -> QuerySet[FactEvent]:
    """Every event of one fact, including those from before it was last erased (stored under the
    key's digest). `key` may itself be a digest, as an erased fact's events show it."""
    return (
        FactEvent.objects.filter(subject_id=subject_id, key__in=history_keys(subject_id, key))
        .select_related("actor_user")
        .order_by("created_at", "id")
    )


def subject_timeline(subject_id: str, *, limit: int = 200) -> list[FactEvent]:
    """The newest events of a traveller, all keys, for the audit view."""
    return list(
        FactEvent.objects.filter(subject_id=subject_id)
        .select_related("actor_user")
        .order_by("-created_at", "-id")[:limit]
    )


def subjects_overview(*, query: str = "", limit: int = 50) -> list[Subject]:
    """Travellers with their fact counts for the staff landing page: one query whatever the size."""
    subjects = Subject.objects.annotate(
        fact_count=Count("facts"),
        pending_count=Count("facts", filter=Q(facts__status=FactStatus.PENDING_REVIEW)),
        sensitive_count=Count("facts", filter=Q(facts__sensitive=True)),
    )
    if query:
        subjects = subjects.filter(subject_id__icontains=query.strip())
    return list(subjects.order_by("-updated_at", "subject_id")[:limit])
