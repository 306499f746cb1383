"""Stop using one fact while it is checked, and use it again (GDPR Art. 18(1)(a)).

Each is a page that says what happens and one button; no JavaScript. Stopping opens a
`restriction` request ("Your requests" lists it); using it again completes that request. The
traveller is always the session's, and the fact is looked up among theirs only.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from memoryadmin.facts import services
from memoryadmin.facts.errors import FactNotFound, FactStateError
from memoryadmin.http_methods import form_page
from memoryadmin.privacy import restriction as privacy_restriction

from .auth import portal_session_required
from .forms import RestrictForm
from .views import _actor, _list_url, _own_fact, not_found


@form_page
@portal_session_required
def fact_restrict(request: HttpRequest, key: str) -> HttpResponse:
    fact = _own_fact(request, key)
    if fact is None:
        return not_found(request)
    if fact.restricted_at is not None:  # a second click, or the back button: already done
        return redirect(_list_url(request))
    form = RestrictForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            privacy_restriction.privacy_restrict(
                subject_id=request.portal_subject_id,
                key=fact.key,
                actor=_actor(request),
                reason="the traveller stopped its use in the privacy portal",
                note=form.cleaned_data["note"],
            )
        except FactNotFound:
            return not_found(request)
        except FactStateError:
            pass  # stopped a moment ago (another tab): the list says so
        else:
            messages.success(
                request, _("We are checking this. The assistant is not using it meanwhile.")
            )
        return redirect(_list_url(request))
    return render(
        request,
        "portal/fact_restrict.html",
        {"fact": fact, "form": form, "list_url": _list_url(request)},
    )


@form_page
@portal_session_required
def fact_unrestrict(request: HttpRequest, key: str) -> HttpResponse:
    fact = _own_fact(request, key)
    if fact is None:
        return not_found(request)
    if fact.restricted_at is None:
        return redirect(_list_url(request))
    if request.method == "POST":
        try:
            services.fact_unrestrict(
                subject_id=request.portal_subject_id,
                key=fact.key,
                actor=_actor(request),
                reason="the traveller lifted it in the privacy portal",
                outcome="lifted",
            )
        except FactNotFound:
            return not_found(request)
        except FactStateError:
            pass  # lifted a moment ago (another tab, or our team)
        else:
            messages.success(request, _("The assistant can use this again."))
        return redirect(_list_url(request))
    return render(
        request, "portal/fact_unrestrict.html", {"fact": fact, "list_url": _list_url(request)}
    )
