"""The reads of the "Memory quality" pages and gauges: precision with its Wilson interval,
overall and by each dimension, week by week, and the signals that need no reviewer. A fixed
number of queries whatever the number of marks: one grouped count of the marks, one statement
for the signals."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from memoryadmin.facts.models import Category

from .choices import Language, LearnedBy, Mark, WrongReason
from .models import QualitySample, QualitySampleItem
from .sql import SQL_LEARNED_SIGNALS

# The page and the gauges count the marks of the samples drawn in the last 12 weeks, and the
# signals over the facts learned in the same weeks.
QUALITY_WEEKS = 12
# z for a two-sided 95% interval.
Z_95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion: unlike p ± z·√(p(1-p)/n) it stays within
    0..1 and is honest for small samples and proportions near 1, which a reviewed sample of a
    good extractor is (8 of 10 gives 0.49 to 0.94). (0, 1) for no trials."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass
class Precision:
    """Marked correct out of marked, for one line of the page."""

    label: str
    correct: int = 0
    marked: int = 0

    @property
    def wrong(self) -> int:
        return self.marked - self.correct

    @property
    def value(self) -> float | None:
        return self.correct / self.marked if self.marked else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.correct, self.marked)

    @property
    def lower(self) -> float:
        return self.interval[0]

    @property
    def upper(self) -> float:
        return self.interval[1]

    @property
    def shown(self) -> str:
        """The precision as a percentage, or "—" when nothing is marked."""
        return f"{self.value:.0%}" if self.marked else "—"

    @property
    def interval_shown(self) -> str:
        """The interval in percentages ("49% to 94%"), or "" when nothing is marked."""
        return f"{self.lower:.0%} to {self.upper:.0%}" if self.marked else ""


@dataclass
class Signals:
    """The reviewer-free signals over the facts learned since `since`."""

    since: datetime
    learned: int = 0
    corrected: int = 0
    staff_changed: int = 0

    @staticmethod
    def _per_1000(count: int, learned: int) -> float | None:
        return 1000 * count / learned if learned else None

    @property
    def corrected_per_1000(self) -> float | None:
        return self._per_1000(self.corrected, self.learned)

    @property
    def staff_changed_per_1000(self) -> float | None:
        return self._per_1000(self.staff_changed, self.learned)

    @property
    def corrected_shown(self) -> str:
        rate = self.corrected_per_1000
        return "—" if rate is None else f"{rate:.1f}"

    @property
    def staff_changed_shown(self) -> str:
        rate = self.staff_changed_per_1000
        return "—" if rate is None else f"{rate:.1f}"


@dataclass
class QualityReport:
    since: datetime
    overall: Precision
    # (column title, table caption, lines), in DIMENSIONS' order.
    by: list[tuple[str, str, list[Precision]]] = field(default_factory=list)
    weeks: list[tuple[date, Precision]] = field(default_factory=list)
    reasons: list[tuple[str, int]] = field(default_factory=list)
    # The same lines keyed by column and stored value, for the gauges' labels.
    lines: dict[str, dict[str, Precision]] = field(default_factory=dict)


# The page's tables, in order: (title, the grouped column).
DIMENSIONS = (
    ("Category", "category"),
    ("Language", "language"),
    ("Origin", "origin"),
    ("Extraction model", "model"),
    ("Prompt version", "prompt_version"),
)


def _label(column: str, value: str) -> str:
    """A line's name in words: the choices' labels, and what an empty model or prompt means."""
    if column == "category":
        return Category(value).label if value in Category.values else value
    if column == "language":
        return Language(value).label if value in Language.values else value
    if column == "origin":
        return LearnedBy(value).label if value in LearnedBy.values else value
    if value == "agent":
        return "none: saved by the agent"
    return value or "not recorded"


def _since(now: datetime | None) -> datetime:
    return (now or timezone.now()) - timedelta(weeks=QUALITY_WEEKS)


def _latest_marks(since: datetime) -> QuerySet[QualitySampleItem]:
    """The marked items drawn since `since`, each fact once: a fact marked in two draws counts
    by its latest mark, in the week of that mark's sample (so the weeks add up to the whole).
    An erased fact's items name no fact any more and each counts as itself."""
    later = (
        QualitySampleItem.objects.filter(
            sample__drawn_at__gte=since,
            subject_id=OuterRef("subject_id"),
            key_hash=OuterRef("key_hash"),
        )
        .exclude(mark="")
        .exclude(key_hash="")
        .filter(
            Q(marked_at__gt=OuterRef("marked_at"))
            | Q(marked_at=OuterRef("marked_at"), id__gt=OuterRef("id"))
        )
    )
    return (
        QualitySampleItem.objects.filter(sample__drawn_at__gte=since)
        .exclude(mark="")
        .filter(~Exists(later))
    )


def quality_report(now: datetime | None = None) -> QualityReport:
    """Precision overall, by each dimension and by week, from one grouped query of the marks
    (its rows are the distinct combinations, not the marks), each fact counted once."""
    since = _since(now)
    rows = (
        _latest_marks(since)
        .order_by()
        .values_list(
            "category", "language", "origin", "model", "prompt_version", "reason", "sample__week"
        )
        .annotate(marked=Count("id"), correct=Count("id", filter=Q(mark=Mark.CORRECT)))
    )
    overall = Precision("All marked facts")
    lines: dict[str, dict[str, Precision]] = {column: {} for _, column in DIMENSIONS}
    weeks: dict[date, Precision] = {}
    reasons: dict[str, int] = defaultdict(int)
    for category, language, origin, model, version, reason, week, marked, correct in rows:
        values = {
            "category": category,
            "language": language,
            "origin": origin,
            "model": model,
            "prompt_version": version,
        }
        for target in (
            overall,
            *(
                lines[column].setdefault(values[column], Precision(_label(column, values[column])))
                for column in values
            ),
            weeks.setdefault(week, Precision(f"Week of {week.isoformat()}")),
        ):
            target.marked += marked
            target.correct += correct
        if reason:
            reasons[reason] += marked
    return QualityReport(
        since=since,
        overall=overall,
        by=[
            (
                title,
                f"By {title.lower()}",
                sorted(lines[column].values(), key=lambda p: (-p.marked, p.label)),
            )
            for title, column in DIMENSIONS
        ],
        weeks=sorted(weeks.items()),
        reasons=[
            (label, reasons[value]) for value, label in WrongReason.choices if reasons.get(value)
        ],
        lines=lines,
    )


def quality_signals(now: datetime | None = None) -> Signals:
    """Corrected or deleted by the traveller within 30 days, rejected or edited by staff, of
    the facts learned in the last QUALITY_WEEKS weeks: one statement."""
    since = _since(now)
    with connection.cursor() as cursor:
        cursor.execute(SQL_LEARNED_SIGNALS, {"since": since})
        learned, corrected, staff_changed = cursor.fetchone()
    return Signals(since=since, learned=learned, corrected=corrected, staff_changed=staff_changed)


def quality_sample_current() -> QualitySample | None:
    """The latest sample drawn."""
    return QualitySample.objects.select_related("drawn_by_user").first()


def quality_sample_items(sample: QualitySample) -> Iterable[QualitySampleItem]:
    """A sample's items with their facts (while they live) and markers, in one query."""
    return list(sample.items.select_related("fact", "marked_by").order_by("id"))
