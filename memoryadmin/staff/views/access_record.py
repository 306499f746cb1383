"""The privacy admins' "Access record": who looked at which traveller, filtered and exported
as CSV, and "Unusual access". The record itself lives in memoryadmin/access/."""

from __future__ import annotations

import csv
from collections.abc import Iterator

from django import forms
from django.conf import settings
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone

from memoryadmin.access import selectors as access_selectors
from memoryadmin.facts.models import SUBJECT_ID_MAX_LENGTH
from memoryadmin.http_methods import read_only

from ..roles import PRIVACY_ADMIN
from ..sso import sso_enabled
from .common import page_of, query_without_page, staff_required

ROWS_PER_PAGE = 100
CSV_COLUMNS = ("at_utc", "staff", "traveller", "what", "sign_in", "address")


class AccessFilterForm(forms.Form):
    staff = forms.CharField(label="Staff member", max_length=150, required=False)
    traveller = forms.CharField(
        label="Traveller id", max_length=SUBJECT_ID_MAX_LENGTH, required=False
    )
    since = forms.DateField(label="From", required=False, widget=forms.DateInput({"type": "date"}))
    until = forms.DateField(label="To", required=False, widget=forms.DateInput({"type": "date"}))

    def clean(self) -> dict:
        data = super().clean()
        if data.get("since") and data.get("until") and data["since"] > data["until"]:
            self.add_error("until", "The end date is before the start date.")
        return data

    def access_filter(self) -> access_selectors.AccessFilter:
        data = self.cleaned_data
        return access_selectors.AccessFilter(
            staff=data["staff"].strip(),
            subject_id=data["traveller"].strip(),
            since=data["since"],
            until=data["until"],
        )


def _cell(text: str) -> str:
    """A spreadsheet must not run what a traveller id or a name says (CSV formula injection)."""
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


class _Echo:
    def write(self, value: str) -> str:
        return value


def _csv_lines(rows) -> Iterator[str]:
    out = csv.writer(_Echo())
    yield out.writerow(CSV_COLUMNS)
    for row in rows.iterator(chunk_size=2000):
        yield out.writerow(
            [
                timezone.localtime(row.at).isoformat(timespec="seconds"),
                _cell(row.staff_username),
                _cell(row.subject_id),
                row.what,
                row.login_method,
                row.address or "",
            ]
        )


@staff_required(PRIVACY_ADMIN)
@read_only
def access_record(request: HttpRequest) -> HttpResponse:
    form = AccessFilterForm(request.GET)
    if not form.is_valid():
        context = {"form": form, "page": None, "unusual": [], "qs": "", **_limits()}
        return render(request, "staff/access_record.html", context, status=400)
    rows = access_selectors.access_rows(form.access_filter())
    if request.GET.get("format") == "csv":
        response = StreamingHttpResponse(_csv_lines(rows), content_type="text/csv")
        response["Content-Disposition"] = 'attachment; filename="staff-access-record.csv"'
        return response
    return render(
        request,
        "staff/access_record.html",
        {
            "form": form,
            "page": page_of(request, rows, ROWS_PER_PAGE),
            "unusual": access_selectors.unusual_access(),
            "qs": query_without_page(request),
            "sso_on": sso_enabled(),
            **_limits(),
        },
    )


def _limits() -> dict[str, int]:
    return {
        "unusual_limit": settings.STAFF_ACCESS_UNUSUAL_PER_HOUR,
        "unusual_days": settings.STAFF_ACCESS_UNUSUAL_DAYS,
        "retention_days": settings.STAFF_ACCESS_RETENTION_DAYS,
    }
