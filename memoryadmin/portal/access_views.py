""" "Who has looked at your memory": the days on which staff opened this traveller's memory,
from the staff access record, with how many times each kind of staff looked (support agents,
privacy officers). No names."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memoryadmin.access import selectors as access_selectors
from memoryadmin.http_methods import read_only

from .auth import portal_session_required


@read_only
@portal_session_required
def looked(request: HttpRequest) -> HttpResponse:
    days = access_selectors.traveller_looks_by_day(request.portal_subject_id)
    return render(request, "portal/looked.html", {"days": days})
