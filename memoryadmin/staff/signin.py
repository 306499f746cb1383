"""The staff sign-in page and what every staff sign-in leaves behind.

Once single sign-on is configured, local password accounts are break-glass accounts: the form
is off unless STAFF_PASSWORD_LOGIN is true. Every sign-in, by either way, is a row in the staff
access record, and the session remembers which way it was, so that every later row says so.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

from memoryadmin.access import writer
from memoryadmin.access.choices import AccessKind, LoginMethod

from .forms import StaffLoginForm
from .security import client_ip
from .sso import SSO_BACKEND, sso_enabled

LOGIN_METHOD_SESSION_KEY = "staff_login_method"


class StaffLoginView(auth_views.LoginView):
    # Its username length enforced before anyone authenticates (a 10,000-character name
    # reached the lock-out library's 255-character column: a 500).
    authentication_form = StaffLoginForm

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.STAFF_PASSWORD_LOGIN:
            return self.render_to_response(self.get_context_data(password_refused=True), status=403)
        return super().post(request, *args, **kwargs)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["sso_enabled"] = sso_enabled()
        context["password_login"] = settings.STAFF_PASSWORD_LOGIN
        return context


def login_method(request: HttpRequest) -> str:
    return request.session.get(LOGIN_METHOD_SESSION_KEY, LoginMethod.UNKNOWN)


@receiver(user_logged_in)
def _record_sign_in(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    if request is None or not hasattr(request, "session"):
        return
    method = (
        LoginMethod.SSO if getattr(user, "backend", "") == SSO_BACKEND else (LoginMethod.PASSWORD)
    )
    request.session[LOGIN_METHOD_SESSION_KEY] = str(method)
    writer.record(
        staff_user_id=user.pk,
        staff_username=user.get_username(),
        what=AccessKind.SIGN_IN,
        subject_ids=[""],
        address=client_ip(request),
        login_method=str(method),
    )
