"""Who may call us and how: DEBUG, the secret key, hosts, HTTP hardening, the page policy.

Production sets SECURE_COOKIES, SECURE_SSL_REDIRECT, SECURE_HSTS_SECONDS and, behind a
TLS-terminating proxy, BEHIND_TLS_PROXY with SECURE_PROXY_SSL_HEADER (README, "Deploying").
"""

from django.core.exceptions import ImproperlyConfigured

from memoryadmin.conf.env import env

DEBUG = env.bool("DEBUG", default=False)
# The development key is public (it is in this file), so it is refused whenever DEBUG is off:
# `make run` turns DEBUG on, `make test` and CI pass a random key, production sets its own.
DEV_SECRET_KEY = "dev-only-insecure-key-change-me"  # noqa: S105 - refused unless DEBUG
SECRET_KEY = env.str("SECRET_KEY", default="") or DEV_SECRET_KEY
if SECRET_KEY == DEV_SECRET_KEY and not DEBUG:
    raise ImproperlyConfigured(
        "Set SECRET_KEY (a long random string): the development key is refused when DEBUG is "
        "off. For local development set DEBUG=true."
    )
# Former keys, comma-separated, while a rotation settles: sessions and signatures made with them
# still verify, and history hashed under them is still found (facts/keyhash.py).
SECRET_KEY_FALLBACKS = env.list("SECRET_KEY_FALLBACKS", default=[])
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"
CSRF_FAILURE_VIEW = "memoryadmin.api.errors.api_csrf_failure"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
# The load balancer probes and Prometheus scrapes over plain HTTP, inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
# Trust X-Forwarded-Proto only when a proxy we control sets it (it is forgeable otherwise):
# the header is honoured only when BEHIND_TLS_PROXY=true says the app runs behind one.
# Value: the header as the proxy sends it, e.g. "X-Forwarded-Proto".
BEHIND_TLS_PROXY = env.bool("BEHIND_TLS_PROXY", default=False)
_PROXY_SSL_HEADER = env.str("SECURE_PROXY_SSL_HEADER", default="").strip()
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _PROXY_SSL_HEADER.upper().replace("-", "_"), "https")
    if _PROXY_SSL_HEADER and BEHIND_TLS_PROXY
    else None
)
USE_X_FORWARDED_HOST = env.bool("USE_X_FORWARDED_HOST", default=False)
# Proxies in front of gunicorn that append the client's address to X-Forwarded-For.
TRUSTED_PROXY_HOPS = env.int("TRUSTED_PROXY_HOPS", default=0)

# Content-Security-Policy (django-csp): our own origin only, no inline script or style. The API
# docs use drf-spectacular's split Swagger view, whose setup script is a separate file.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
# No report-only policy (memoryadmin/middleware.py builds the site header once while there is none).
CONTENT_SECURITY_POLICY_REPORT_ONLY = None
