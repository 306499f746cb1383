from django.conf import settings
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from memoryadmin.api.errors import api_not_found
from memoryadmin.observability.views import metrics_view
from memoryadmin.staff.otp_views import otp_verify
from memoryadmin.staff.signin import StaffLoginView
from memoryadmin.staff.sso import oidc_callback, oidc_start

urlpatterns = [
    path("api/v1/", include("memoryadmin.api.urls")),
    path("api/v1/", include("memoryadmin.api.turns")),
    re_path(r"^api/", api_not_found),  # /api/ outside v1: still the JSON shape
    path("healthz", include("memoryadmin.api.health")),
    path("metrics", metrics_view, name="metrics"),  # Prometheus; allowed networks or token
    path("portal/", include("memoryadmin.portal.urls")),
    path("login/", StaffLoginView.as_view(), name="login"),
    path("oidc/authenticate/", oidc_start, name="oidc_authentication_init"),
    path("oidc/callback/", oidc_callback, name="oidc_authentication_callback"),
    path("login/verify/", otp_verify, name="otp-verify"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("staff/settings/", include("memoryadmin.staff.settings.urls")),  # privacy admins
    path("staff/privacy/", include("memoryadmin.staff.privacy.urls")),  # privacy requests
    path("staff/", include("memoryadmin.staff.urls")),
    path("", RedirectView.as_view(pattern_name="staff:overview", permanent=False)),
]
if settings.DEBUG:  # the demo's webhook recipient (memoryadmin/staff/demo/receiver.py)
    urlpatterns.append(path("", include("memoryadmin.staff.demo.receiver")))

handler400 = "memoryadmin.api.errors.bad_request"
handler403 = "memoryadmin.api.errors.permission_denied"
handler404 = "memoryadmin.api.errors.page_not_found"
handler500 = "memoryadmin.api.errors.server_error"
