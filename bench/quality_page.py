"""Issue 33: the "Memory quality" page at 10 and at 1,000 marks (Django's test client, the whole
middleware stack, an editor signed in): p50 of each and the statements each page ran, which
must be the same (one grouped query of the marks, one statement of signals).

    DATABASE_URL=... SECRET_KEY=... python bench/quality_page.py   # a migrated scratch database
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

from memoryadmin.quality.models import QualitySample, QualitySampleItem  # noqa: E402

DRAWN_BY = "bench/quality_page.py"
RUNS = 20


def marks(count: int) -> None:
    """`count` marks of one sample of its own (earlier runs' removed), spread over every
    dimension the page groups by."""
    QualitySample.objects.filter(drawn_by=DRAWN_BY).delete()
    now = timezone.now()
    sample = QualitySample.objects.create(drawn_at=now, week=now.date(), drawn_by=DRAWN_BY)
    QualitySampleItem.objects.bulk_create(
        QualitySampleItem(
            sample=sample,
            category=("preference", "constraint", "context")[n % 3],
            language=("en", "zh-Hant", "other")[n % 3],
            origin=("extraction", "agent")[n % 2],
            model=f"model-{n % 4}",
            prompt_version=f"prompt{n % 5}",
            learned_at=now,
            mark="correct" if n % 10 else "wrong",
            reason="" if n % 10 else "inference",
        )
        for n in range(count)
    )


def measure(client: Client) -> tuple[float, int]:
    samples = []
    for index in range(RUNS + 3):
        start = time.perf_counter()
        response = client.get("/staff/quality/")
        took = time.perf_counter() - start
        assert response.status_code == 200, response.status_code
        if index >= 3:
            samples.append(took)
    with CaptureQueriesContext(connection) as queries:
        client.get("/staff/quality/")
    return statistics.median(samples), len(queries)


def main() -> None:
    user, _ = User.objects.get_or_create(username="bench-quality-editor")
    user.groups.add(Group.objects.get_or_create(name="editor")[0])
    client = Client()
    client.force_login(user)
    try:
        for count in (10, 1000):
            marks(count)
            p50, statements = measure(client)
            print(f"{count:>5,} marks  p50 {p50 * 1000:6.1f} ms  {statements} statements")
    finally:
        QualitySample.objects.filter(drawn_by=DRAWN_BY).delete()


if __name__ == "__main__":
    main()
