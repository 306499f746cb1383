"""Staff sign-in: passwords, lock-out, sessions, single sign-on, and the staff access record."""

from datetime import timedelta

from memoryadmin.conf.env import env

# Staff passwords: all four of Django's checks, at least 12 characters.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 12},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Failed staff logins lock out the account and, separately, the address (django-axes).
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LOGIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one locks
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "memoryadmin.staff.security.lockout_response"
AXES_CLIENT_IP_CALLABLE = "memoryadmin.staff.security.client_ip"
# Privacy admins pass a TOTP code after their password (memoryadmin.staff.security).
OTP_TOTP_ISSUER = "memoryadmin"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "staff:overview"
LOGOUT_REDIRECT_URL = "/login/?signed_out=1"  # the sign-in page then says so
# Staff sessions end after this many idle seconds: each request pushes the expiry forward.
# memoryadmin.staff.middleware.IdleTimeoutMiddleware slides the expiry at most once a minute
# (instead of SESSION_SAVE_EVERY_REQUEST, which would write the session row on every page).
SESSION_COOKIE_AGE = env.int("STAFF_SESSION_IDLE_SECONDS", default=30 * 60)

# --- Staff single sign-on (OpenID Connect, mozilla-django-oidc; memoryadmin/staff/sso.py).
# Configured when OIDC_ISSUER is set: the endpoints come from its discovery document.
OIDC_ISSUER = env.url_str("OIDC_ISSUER", default="").rstrip("/")
OIDC_RP_CLIENT_ID = env.str("OIDC_CLIENT_ID", default="")
OIDC_RP_CLIENT_SECRET = env.str("OIDC_CLIENT_SECRET", default="")
OIDC_RP_SIGN_ALGO = env.str("OIDC_SIGN_ALGO", default="RS256")
OIDC_RP_SCOPES = env.str("OIDC_SCOPES", default="openid email profile groups")
# The claim that lists the person's groups, and which group gives which staff role
# ("group=role,group=role", read by memoryadmin/staff/sso.py, which checks the roles).
OIDC_GROUPS_CLAIM = env.str("OIDC_GROUPS_CLAIM", default="groups")
OIDC_ROLE_MAP = env.str(
    "OIDC_ROLE_MAP",
    default="memory-viewers=viewer,memory-editors=editor,memory-privacy=privacy_admin",
)
# `amr` values that count as a second factor for privacy admins.
OIDC_MFA_AMR = env.list("OIDC_MFA_AMR", default=["mfa", "otp", "hwk"])
OIDC_CLOCK_SKEW_SECONDS = env.int("OIDC_CLOCK_SKEW_SECONDS", default=60)
OIDC_USE_NONCE = True
OIDC_USE_PKCE = True
OIDC_TIMEOUT = env.float("OIDC_TIMEOUT_SECONDS", default=5.0)
OIDC_STORE_ID_TOKEN = False
OIDC_CREATE_USER = True
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
LOGIN_REDIRECT_URL_FAILURE = "/login/"
# An SSO session goes back to the provider (silently, prompt=none) this often, so a person removed
# from the airline's groups loses access within the staff idle timeout.
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = env.int(
    "OIDC_RECHECK_SECONDS", default=min(SESSION_COOKIE_AGE, 15 * 60)
)
OIDC_EXEMPT_URLS = ["login", "logout", "otp-verify"]
# Failed logins are counted first (django-axes); the SSO backend only when SSO is configured.
AUTHENTICATION_BACKENDS = [
    "memoryadmin.staff.security.WebLoginLockout",
    "django.contrib.auth.backends.ModelBackend",
    *(["memoryadmin.staff.sso.StaffOIDCBackend"] if OIDC_ISSUER else []),
]
# Local password accounts are break-glass accounts once SSO is configured: off unless turned on.
STAFF_PASSWORD_LOGIN = env.bool("STAFF_PASSWORD_LOGIN", default=not OIDC_ISSUER)

# --- The staff access record (memoryadmin/access/); swept daily (conf/cache_celery.py).
STAFF_ACCESS_RECORDING = env.bool("STAFF_ACCESS_RECORDING", default=True)
STAFF_ACCESS_RETENTION_DAYS = env.int("STAFF_ACCESS_RETENTION_DAYS", default=400)
# "Unusual access": a staff member who opened more than this many travellers in one hour,
# looked for over the last STAFF_ACCESS_UNUSUAL_DAYS days.
STAFF_ACCESS_UNUSUAL_PER_HOUR = env.int("STAFF_ACCESS_UNUSUAL_PER_HOUR", default=30)
STAFF_ACCESS_UNUSUAL_DAYS = env.int("STAFF_ACCESS_UNUSUAL_DAYS", default=7)
