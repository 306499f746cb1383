"""Every write of the quality app: drawing the weekly sample and recording a
reviewer's mark, which also goes into the fact's history (`facts.services.fact_quality_mark`)."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryadmin.extraction.models import ExtractionJob
from memoryadmin.facts import services as fact_services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactInvalid, FactStateError
from memoryadmin.facts.keyhash import event_key_hash
from memoryadmin.facts.models import ActorKind, EventAction, FactEvent, MemoryFact, Origin

from .choices import LearnedBy, Mark, WrongReason
from .language import value_language
from .models import QualitySample, QualitySampleItem

SAMPLE_DAYS = 7
# The agent's save_memory has no extraction model or prompt: its line on the page says so.
AGENT_MODEL = "agent"
_JOB_LABEL = re.compile(r"^extraction job (\d+)$")


def week_of(moment: datetime) -> date:
    """The Monday (UTC) of the week `moment` falls in."""
    day = moment.astimezone(UTC).date()
    return day - timedelta(days=day.weekday())


def _quotas(sizes: dict[tuple[str, str], int], size: int) -> dict[tuple[str, str], int]:
    """How many facts each stratum (category, language) gives: in proportion to the strata's
    sizes (largest remainders), then every stratum at least one while `size` allows, taken
    from the largest quotas, so a rare language is never left out of a small sample."""
    total = sum(sizes.values())
    if total <= size:
        return dict(sizes)
    strata = sorted(sizes)
    shares = {s: size * sizes[s] / total for s in strata}
    quotas = {s: int(shares[s]) for s in strata}
    by_remainder = sorted(strata, key=lambda s: (-(shares[s] - quotas[s]), s))
    for stratum in by_remainder[: size - sum(quotas.values())]:
        quotas[stratum] += 1
    for stratum in strata:
        if quotas[stratum] == 0 and size >= len(strata):
            donor = max(strata, key=lambda s: (quotas[s], s))
            quotas[donor] -= 1
            quotas[stratum] = 1
    return quotas


def _models_of(chosen: list[tuple[int, str, str]]) -> dict[tuple[str, str], tuple[str, str]]:
    """(subject, key hash) -> (model, prompt version) of the extraction job that first wrote
    each fact (its `created` event names the job), in two queries whatever the number."""
    hashes = {key_hash for _, _, key_hash in chosen}
    events = (
        FactEvent.objects.filter(
            subject_id__in={subject for _, subject, _ in chosen},
            key_hash__in=hashes,
            action=EventAction.CREATED,
            actor_kind=ActorKind.EXTRACTION,
        )
        .order_by("created_at", "id")
        .values_list("subject_id", "key_hash", "actor_label")
    )
    job_of: dict[tuple[str, str], int] = {}
    for subject, key_hash, label in events:
        found = _JOB_LABEL.match(label)
        if found:
            job_of[(subject, key_hash)] = int(found.group(1))  # the latest wins
    jobs = {
        pk: (model, version)
        for pk, model, version in ExtractionJob.objects.filter(
            pk__in=set(job_of.values())
        ).values_list("pk", "model", "prompt_version")
    }
    return {slot: jobs[pk] for slot, pk in job_of.items() if pk in jobs}


@transaction.atomic
def quality_sample_draw(
    *,
    actor: Actor,
    size: int | None = None,
    now: datetime | None = None,
    seed: int | None = None,
) -> QualitySample:
    """Draw this week's sample: up to `size` (QUALITY_SAMPLE_SIZE) facts learned by extraction
    or save_memory in the 7 days before `now`, stratified by category and language (each
    stratum at least one while the size allows, the rest in proportion), never more than one
    per traveller. A second draw in the same week takes only facts not yet in that week's
    samples, so a week's precision counts each fact once. Each item copies the dimensions the
    page counts by: the model and prompt version of the job that learned it ("agent" for
    save_memory)."""
    size = settings.QUALITY_SAMPLE_SIZE if size is None else size
    if size < 1:
        raise FactInvalid("A sample needs at least one fact.", fields={"size": "At least 1."})
    now = now or timezone.now()
    rng = random.Random(seed)  # noqa: S311 - a review sample, not a secret
    drawn_this_week = QualitySampleItem.objects.filter(
        sample__week=week_of(now), fact_id__isnull=False
    ).values("fact_id")
    candidates = list(
        MemoryFact.objects.filter(
            origin__in=(Origin.EXTRACTION, Origin.AGENT),
            created_at__gt=now - timedelta(days=SAMPLE_DAYS),
            created_at__lte=now,
        )
        .exclude(id__in=drawn_this_week)
        .order_by("id")
        .values_list("id", "subject_id", "key", "value", "category", "origin", "created_at")
    )
    strata: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for row in candidates:
        strata[(row[4], value_language(row[3]))].append(row)
    for rows in strata.values():
        rng.shuffle(rows)
    quotas = _quotas({s: len(rows) for s, rows in strata.items()}, size)
    taken: set[str] = set()
    chosen: list[tuple[tuple[str, str], tuple]] = []
    leftovers: list[tuple[tuple[str, str], tuple]] = []
    for stratum in sorted(strata):
        wanted = quotas.get(stratum, 0)
        for row in strata[stratum]:
            if wanted and row[1] not in taken:
                taken.add(row[1])
                chosen.append((stratum, row))
                wanted -= 1
            else:
                leftovers.append((stratum, row))
    # A stratum short of travellers of its own: the rest from any stratum, still one each.
    rng.shuffle(leftovers)
    for stratum, row in leftovers:
        if len(chosen) >= size:
            break
        if row[1] not in taken:
            taken.add(row[1])
            chosen.append((stratum, row))
    sample = QualitySample.objects.create(
        drawn_at=now,
        week=week_of(now),
        drawn_by=actor.label[:200],
        drawn_by_user=actor.user,
        candidates=len(candidates),
    )
    hashed = [(row[0], row[1], event_key_hash(row[1], row[2])) for _, row in chosen]
    models = _models_of(
        [h for h, (_, row) in zip(hashed, chosen, strict=True) if row[5] == Origin.EXTRACTION]
    )
    items = []
    for (fact_id, subject_id, key_hash), ((category, language), row) in zip(
        hashed, chosen, strict=True
    ):
        if row[5] == Origin.AGENT:
            model = version = AGENT_MODEL
        else:
            model, version = models.get((subject_id, key_hash), ("", ""))
        items.append(
            QualitySampleItem(
                sample=sample,
                fact_id=fact_id,
                subject_id=subject_id,
                key_hash=key_hash,
                category=category,
                language=language,
                origin=LearnedBy(row[5]),
                model=model[:100],
                prompt_version=version[:16],
                learned_at=row[6],
            )
        )
    QualitySampleItem.objects.bulk_create(items)
    return sample


def mark_words(mark: str, reason: str) -> str:
    """The mark as the fact's history says it."""
    if mark == Mark.CORRECT:
        return "Marked correct in the quality sample"
    return f"Marked wrong in the quality sample: {WrongReason(reason).label}"


@transaction.atomic
def quality_mark_record(
    *, actor: Actor, item: QualitySampleItem, mark: str, reason: str = ""
) -> QualitySampleItem:
    """A reviewer marks one sampled fact correct, or wrong with one reason; the mark is also a
    `quality_marked` event in the fact's history. Marking again replaces the mark (and adds an
    event). A sensitive fact is marked only by someone who revealed it (FactStateError), and an
    erased one not at all."""
    if mark not in Mark.values:
        raise FactInvalid("Choose correct or wrong.", fields={"mark": "Choose one."})
    if mark == Mark.WRONG and reason not in WrongReason.values:
        raise FactInvalid("Say why it is wrong.", fields={"reason": "Choose a reason."})
    if mark == Mark.CORRECT:
        reason = ""
    if actor.kind != ActorKind.STAFF:
        raise FactStateError("Only a reviewer marks the quality sample.")
    locked = QualitySampleItem.objects.select_for_update().get(pk=item.pk)
    fact = (
        MemoryFact.objects.filter(pk=locked.fact_id).values_list("subject_id", "key").first()
        if locked.fact_id
        else None
    )
    if fact is None:
        raise FactStateError("This fact was erased after the draw: there is nothing to mark.")
    fact_services.fact_quality_mark(
        subject_id=fact[0], key=fact[1], actor=actor, words=mark_words(mark, reason)
    )
    locked.mark, locked.reason = mark, reason
    locked.marked_by, locked.marked_at = actor.user, timezone.now()
    locked.save(update_fields=["mark", "reason", "marked_by", "marked_at"])
    return locked
