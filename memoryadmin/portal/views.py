"""The traveller privacy portal. Thin views: every read through `portal.selectors` or
`facts.selectors`, every change through `facts.services` with `Actor.customer(...)`. The
traveller is always the session's: no view takes a traveller id from the request."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

from memoryadmin.conf.env import rate_of
from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactBlocked, FactConflict, FactInvalid, FactNotFound
from memoryadmin.facts.models import MemoryFact
from memoryadmin.http_methods import form_page, post_only, read_only
from memoryadmin.privacy import flows as privacy_flows
from memoryadmin.privacy import restriction as privacy_restriction
from memoryadmin.privacy import selectors as privacy_selectors
from memoryadmin.privacy.package import traveller_package

from . import selectors, throttle
from .auth import (
    COOKIE_NAME,
    clear_session_cookie,
    portal_session_required,
    set_session_cookie,
)
from .display import traveller_view
from .forms import ChoicesForm, FactEditForm, ForgetForm, LanguageForm
from .middleware import LANGUAGE_COOKIE, PORTAL_PREFIX
from .services import (
    LinkRefused,
    portal_link_check,
    portal_link_redeem,
    portal_link_subject,
    portal_session_end,
    portal_session_resume,
)

# Status of the page that explains a refused link.
_REFUSED_STATUS = {"used": 410, "expired": 410, "invalid": 404}


def _actor(request: HttpRequest) -> Actor:
    return Actor.customer(request.portal_subject_id)


def _own_fact(request: HttpRequest, key: str) -> MemoryFact | None:
    """The session traveller's fact with this key; another traveller's key is simply not found."""
    return fact_selectors.subject_fact(request.portal_subject_id, key)


def _list_url(request: HttpRequest) -> str:
    """The page of the list the traveller came from: the change and delete links carry it as
    `?page=N`, so saving or deleting returns there (anything else is the first page)."""
    url = reverse("portal:home")
    raw = request.GET.get("page", "")
    if raw.isascii() and raw.isdigit() and 1 < int(raw) <= 100_000:
        return f"{url}?page={int(raw)}"
    return url


def not_found(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
    """The portal's own "not found" page, in the traveller's language and style."""
    return render(request, "portal/not_found.html", status=404)


# --- getting in ----------------------------------------------------------------------------------


@form_page
def open_link(request: HttpRequest, secret: str) -> HttpResponse:
    """A GET only looks at the link and shows one button; the button's POST spends it, starts
    the session, and leaves the address with the secret behind. Mail scanners open every link
    in an e-mail with a GET, so a GET must never use up the traveller's link."""
    if not throttle.hit(request, scope="redeem", rate=settings.PORTAL_REDEEM_RATE):
        response = render(request, "portal/link_throttled.html", status=429)
        response["Retry-After"] = str(rate_of(settings.PORTAL_REDEEM_RATE).seconds)
        return response
    previous, _ended = portal_session_resume(request.COOKIES.get(COOKIE_NAME))
    try:
        if request.method == "GET":
            portal_link_check(secret=secret)
            return render(request, "portal/open.html", {"language_next": request.path})
        session, cookie_secret = portal_link_redeem(secret=secret)
    except LinkRefused as refused:
        if (
            refused.reason == "used"
            and previous is not None
            and portal_link_subject(secret=secret) == previous.subject_id
        ):
            return redirect("portal:home")  # their own link again, while still signed in
        return redirect("portal:link-refused", reason=refused.reason)
    if previous is not None:
        portal_session_end(session=previous)  # one traveller per browser at a time
    response = redirect("portal:home")
    set_session_cookie(response, cookie_secret)
    return response


@read_only
def link_refused(request: HttpRequest, reason: str) -> HttpResponse:
    if reason not in _REFUSED_STATUS:
        return not_found(request)
    return render(
        request, "portal/link_refused.html", {"reason": reason}, status=_REFUSED_STATUS[reason]
    )


@post_only
@portal_session_required
def sign_out(request: HttpRequest) -> HttpResponse:
    """End the session, then redirect: a refresh of the next page re-sends nothing."""
    portal_session_end(session=request.portal_session)
    response = redirect("portal:signed-out")
    clear_session_cookie(response)
    return response


@read_only
def signed_out_page(request: HttpRequest) -> HttpResponse:
    """Where sign-out lands. It names nobody, so it needs no session."""
    return render(request, "portal/signed_out.html", {"signed_out": True})


# --- seeing --------------------------------------------------------------------------------------


@read_only
@portal_session_required
def home(request: HttpRequest) -> HttpResponse:
    context = traveller_view(request.portal_subject_id, page=request.GET.get("page"))
    context["choices"] = ChoicesForm(
        initial={"learn": not context["learning_paused"], "use": not context["use_paused"]}
    )
    return render(request, "portal/home.html", context)


# --- correcting and deleting ---------------------------------------------------------------------


@form_page
@portal_session_required
def fact_edit(request: HttpRequest, key: str) -> HttpResponse:
    fact = _own_fact(request, key)
    if fact is None:
        return not_found(request)
    initial = {"value": fact.value, "version": fact.version}
    form = FactEditForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            privacy_flows.privacy_correct(  # a rectification request, recorded and closed
                subject_id=request.portal_subject_id,
                key=fact.key,
                value=form.cleaned_data["value"],
                expected_version=form.cleaned_data["version"],
                actor=_actor(request),
                reason="corrected by the traveller in the privacy portal",
            )
        except FactBlocked:
            form.add_error(
                "value",
                _(
                    "For your safety we can't keep card, account, ID or phone numbers or e-mail "
                    "addresses here. Please leave those out."
                ),
            )
        except FactConflict:
            fact = _own_fact(request, key)
            if fact is None:
                return not_found(request)
            form = FactEditForm(data={"value": form.cleaned_data["value"], "version": fact.version})
            form.is_valid()
            form.add_error(
                None,
                _(
                    "This was changed somewhere else while you were editing. Check the wording "
                    "below and save again."
                ),
            )
        except FactInvalid:
            form.add_error("value", _("Write a few words the assistant should remember."))
        except FactNotFound:
            return not_found(request)
        else:
            messages.success(request, _("Saved. The assistant will use your wording from now on."))
            return redirect(_list_url(request))
    return render(
        request,
        "portal/fact_edit.html",
        {"fact": fact, "form": form, "list_url": _list_url(request)},
    )


@form_page
@portal_session_required
def fact_delete(request: HttpRequest, key: str) -> HttpResponse:
    fact = _own_fact(request, key)
    if fact is None:
        return not_found(request)
    if request.method == "POST":
        privacy_restriction.privacy_fact_delete(  # closes a restriction request about it
            subject_id=request.portal_subject_id,
            key=fact.key,
            actor=_actor(request),
            reason="deleted by the traveller in the privacy portal",
        )
        messages.success(request, _("Deleted. The assistant no longer remembers it."))
        return redirect(_list_url(request))
    return render(
        request, "portal/fact_delete.html", {"fact": fact, "list_url": _list_url(request)}
    )


# --- the two switches ----------------------------------------------------------------------------


@post_only
@portal_session_required
def choices(request: HttpRequest) -> HttpResponse:
    form = ChoicesForm(request.POST)
    form.is_valid()  # two optional checkboxes: always valid, absent means off
    subject, _restriction = privacy_flows.privacy_pause(  # pausing is a restriction request
        subject_id=request.portal_subject_id,
        memory_paused=not form.cleaned_data["learn"],
        memory_use_paused=not form.cleaned_data["use"],
        actor=_actor(request),
        reason="changed by the traveller in the privacy portal",
    )
    learning = (
        _("The assistant won't learn anything new from your conversations.")
        if subject.memory_paused
        else _("The assistant may learn from your conversations.")
    )
    if not subject.memory_use_paused:
        use = _("It uses what it remembers about you.")
    elif subject.memory_paused:
        use = _("It won't use what it remembers about you.")
    else:  # after a sentence that says yes: each language marks the turn its own way
        use = _("But it won't use what it remembers about you.")
    if not subject.memory_paused and not subject.memory_use_paused:  # both on: one sentence
        messages.success(
            request,
            _(
                "Your choices are saved. The assistant may learn from your conversations, and it "
                "uses what it remembers when it answers."
            ),
        )
        return redirect("portal:home")
    # One sentence pattern, so each language joins the parts its own way (no spaces in Chinese).
    messages.success(
        request,
        _("Your choices are saved. %(learning)s %(use)s") % {"learning": learning, "use": use},
    )
    return redirect("portal:home")  # the confirmation is at the top of the page


# --- export --------------------------------------------------------------------------------------


@read_only
@portal_session_required
def export(request: HttpRequest) -> HttpResponse:
    """The download package (`privacy/package.py`) in the page's language."""
    package = traveller_package(request.portal_subject_id)
    # The download is an access request, closed with the SHA-256 of exactly these bytes.
    privacy_flows.privacy_export_record(
        subject_id=request.portal_subject_id, sha256=package.sha256, actor=_actor(request)
    )
    response = HttpResponse(package.body, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{package.filename}"'
    return response


# --- forget everything ---------------------------------------------------------------------------


@read_only
@portal_session_required
def forget(request: HttpRequest) -> HttpResponse:
    """Step one: what will go and what will not."""
    overview = selectors.portal_overview(request.portal_subject_id)
    held = bool(overview.subject is not None and overview.subject.legal_hold)
    # Nothing remembered: the page says so and offers nothing to confirm.
    return render(request, "portal/forget.html", {"fact_count": overview.total, "legal_hold": held})


@form_page
@portal_session_required
def forget_confirm(request: HttpRequest) -> HttpResponse:
    """Step two: the one red button (not offered when nothing is remembered)."""
    count = selectors.portal_overview(request.portal_subject_id).total
    if not count:
        return redirect("portal:forget")
    form = ForgetForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        outcome = privacy_flows.privacy_forget(  # an erasure request, with its evidence
            subject_id=request.portal_subject_id,
            actor=_actor(request),
            reason="the traveller chose 'forget everything' in the privacy portal",
        )
        if outcome.receipt is None:  # a legal hold: nothing erased, the request is on record
            return render(
                request, "portal/forget_held.html", {"request_number": outcome.request.number}
            )
        # Committed: now count what still holds the erased facts (must be 0).
        privacy_flows.privacy_verify_erasure(request_id=outcome.request.pk, actor=_actor(request))
        return redirect("portal:receipt", number=outcome.receipt.number)
    return render(request, "portal/forget_confirm.html", {"form": form, "fact_count": count})


@read_only
@portal_session_required
def receipt(request: HttpRequest, number: str) -> HttpResponse:
    found = fact_selectors.clear_receipt_get(number, subject_id=request.portal_subject_id)
    if found is None:
        return not_found(request)
    language = translation.get_language() or ""
    deliveries = [
        {  # the name the airline gave it for travellers, never its internal name
            "name": row["traveller_names"].get(language) or _("Another of our systems"),
            "acknowledged": row["acknowledged"],
        }
        for row in privacy_selectors.receipt_deliveries(found.number)
    ]
    context = {
        "receipt": found,
        "erasure_request": privacy_selectors.erasure_request_for_receipt(found.number),
        "deliveries": deliveries,
    }
    return render(request, "portal/receipt.html", context)


# --- language ------------------------------------------------------------------------------------


@post_only
def set_language(request: HttpRequest) -> HttpResponse:
    """The switcher on every page: a plain form, so it works without JavaScript."""
    form = LanguageForm(request.POST)
    target = reverse("portal:home")
    if form.is_valid():
        wanted = form.cleaned_data["next"]
        if wanted.startswith(PORTAL_PREFIX) and url_has_allowed_host_and_scheme(
            wanted, allowed_hosts={request.get_host()}
        ):
            target = wanted
    response = HttpResponseRedirect(target)
    if form.is_valid():
        response.set_cookie(
            LANGUAGE_COOKIE,
            form.cleaned_data["language"],
            max_age=365 * 24 * 3600,
            path=PORTAL_PREFIX,
            secure=settings.PORTAL_COOKIE_SECURE,
            httponly=True,
            samesite="Lax",
        )
    return response
