"""The second step of a privacy admin's sign-in: a code from their authenticator app."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render, resolve_url
from django.utils.http import url_has_allowed_host_and_scheme
from django_otp import login as otp_login
from django_otp import match_token

from .security import OTP_REQUIRED_SESSION_KEY, confirmed_devices, is_verified


class CodeForm(forms.Form):
    code = forms.CharField(
        label="Authentication code",
        min_length=6,
        max_length=8,
        help_text="The 6-digit code your authenticator app shows for memoryadmin.",
        widget=forms.TextInput(
            attrs={"autocomplete": "one-time-code", "inputmode": "numeric", "autofocus": True}
        ),
    )

    def clean_code(self) -> str:
        code = "".join(self.cleaned_data["code"].split())
        if not code.isdigit():
            raise forms.ValidationError("Enter the digits only.")
        return code


def _next_url(request: HttpRequest) -> str:
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    if wanted and url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return resolve_url(settings.LOGIN_REDIRECT_URL)


@login_required
def otp_verify(request: HttpRequest) -> HttpResponse:
    next_url = _next_url(request)
    if is_verified(request) or not request.session.get(OTP_REQUIRED_SESSION_KEY):
        return redirect(next_url)
    devices = confirmed_devices(request.user)
    form = CodeForm(request.POST or None)
    if request.method == "POST" and devices and form.is_valid():
        device = match_token(request.user, form.cleaned_data["code"])
        if device is not None:
            otp_login(request, device)
            request.session.cycle_key()  # a new session id for the fully signed-in session
            return redirect(next_url)
        form.add_error(
            "code",
            "That code is not right or has expired. Enter the code your app shows now; after "
            "several wrong codes you must wait a little before trying again.",
        )
    return render(
        request,
        "registration/otp_verify.html",
        {"form": form, "next": next_url, "has_device": bool(devices)},
        status=400 if form.errors else 200,
    )
