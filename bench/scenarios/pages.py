"""Scenario 5, server-rendered pages at 10 and at 500 facts."""

from __future__ import annotations

import time
from collections.abc import Callable

from bench import generate
from bench.harness import Context, Row


def scenario_pages(ctx: Context, rows: list[Row]) -> None:
    """Server-rendered pages at 10 and at 500 facts: render time (in-process, Django's test
    client, the whole middleware stack) and SQL statements per page."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    small, heavy = ctx.subjects[0], generate.heavy_ids(ctx.preset)[0]
    n = max(20, ctx.n // 10)

    def measure(client: Client, path: str) -> tuple[list[float], int]:
        samples = []
        for index in range(n + 3):
            start = time.perf_counter()
            response = client.get(path)
            took = time.perf_counter() - start
            if response.status_code != 200:
                where = response.get("Location", "")
                raise RuntimeError(f"{path}: HTTP {response.status_code} {where}".rstrip())
            if index >= 3:
                samples.append(took)
        counts = []
        for _ in range(2):  # the lower of two: one may land on the 5-second settings re-read
            with CaptureQueriesContext(connection) as queries:
                client.get(path)
            counts.append(len(queries))
        return samples, min(counts)

    pages: list[tuple[str, Callable[[str], tuple[Client, str]]]] = []
    try:
        from memoryadmin.portal.services import portal_link_issue

        def portal_page(subject: str) -> tuple[Client, str]:
            client = Client()
            link = portal_link_issue(subject_id=subject, issued_by="bench")
            client.post(f"/portal/open/{link.secret}")
            return client, "/portal/"

        pages.append(("portal page", portal_page))
    except (ImportError, RuntimeError):  # RuntimeError: installed, but not an app here
        print("scenario 5: no traveller portal in this checkout")
    staff = _staff_pages()
    pages.extend(staff)
    if not staff:
        print("scenario 5: no staff traveller page / timeline in this checkout")
    _recording_case(rows, measure, staff, heavy)
    for name, opener in pages:
        base_samples, base_queries = measure(*opener(small))
        big_samples, big_queries = measure(*opener(heavy))
        base = Row("5 pages", f"{name}, 10 facts ({base_queries} queries)", base_samples)
        rows.append(base)
        rows.append(
            Row(
                "5 pages",
                f"{name}, 500 facts ({big_queries} queries)",
                big_samples,
                baseline=base,
                target="<= 3x the 10-fact page, same queries"
                if big_queries == base_queries
                else f"QUERIES DIFFER ({base_queries} vs {big_queries})",
                limit=3.0,
            )
        )


def _staff_pages() -> list[tuple[str, Callable[[str], tuple[object, str]]]]:
    """The staff traveller page and timeline, when this checkout has them (issue 8)."""
    from django.urls import NoReverseMatch, reverse

    found = []
    for label, names in (
        ("staff traveller page", ("staff:traveller", "staff:subject")),
        ("staff timeline", ("staff:timeline", "staff:subject-timeline")),
    ):
        for name in names:
            try:
                reverse(name, args=["x"])
            except NoReverseMatch:
                continue

            def opener(subject: str, name: str = name) -> tuple[object, str]:
                from django.contrib.auth import get_user_model
                from django.contrib.auth.models import Group
                from django.test import Client

                user, _ = get_user_model().objects.get_or_create(
                    username="bench-editor", defaults={"is_staff": True}
                )
                # An editor sees every traveller page; a privacy admin would first be sent to
                # the TOTP step, which is not what this scenario measures.
                user.groups.set(Group.objects.filter(name="editor"))
                client = Client()
                client.force_login(user)
                return client, reverse(name, args=[subject])

            found.append((label, opener))
            break
    return found


def _recording_case(rows: list[Row], measure, staff, subject: str) -> None:
    """The staff traveller page with the access record off (the baseline, as before issue 24)
    and on, measured alternately in the same run: "no slower than before, within noise"."""
    from django.conf import settings

    if not staff or not hasattr(settings, "STAFF_ACCESS_RECORDING"):
        return
    _label, opener = staff[0]
    client, path = opener(subject)
    samples: dict[bool, list[float]] = {False: [], True: []}
    queries: dict[bool, int] = {}
    try:
        for _ in range(3):  # alternate, so that drift hits both alike
            for recording in (False, True):
                settings.STAFF_ACCESS_RECORDING = recording
                taken, count = measure(client, path)
                samples[recording].extend(taken)
                queries[recording] = count
    finally:
        settings.STAFF_ACCESS_RECORDING = True
    base = Row(
        "5 pages",
        f"staff traveller page, access record off ({queries[False]} queries)",
        samples[False],
    )
    rows.append(base)
    rows.append(
        Row(
            "5 pages",
            f"staff traveller page, access record on ({queries[True]} queries)",
            samples[True],
            baseline=base,
            target="<= 1.1x the page without the record",
            limit=1.1,
        )
    )
