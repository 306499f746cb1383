"""The one settings module. Everything that differs between a laptop and production is an env var.

The embedded default (no env at all) is a SQLite file and eager Celery tasks, so `make run`
works on a fresh machine; production sets DATABASE_URL and CELERY_BROKER_URL.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from memoryadmin.observability.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
# The development key is public (it is in this file), so it is refused whenever DEBUG is off:
# `make run` turns DEBUG on, `make test` and CI pass a random key, production sets its own.
DEV_SECRET_KEY = "dev-only-insecure-key-change-me"  # noqa: S105 - refused unless DEBUG
SECRET_KEY = os.environ.get("SECRET_KEY", "") or DEV_SECRET_KEY
if SECRET_KEY == DEV_SECRET_KEY and not DEBUG:
    raise ImproperlyConfigured(
        "Set SECRET_KEY (a long random string): the development key is refused when DEBUG is "
        "off. For local development set DEBUG=true."
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "csp",
    "axes",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # the docs UI served from our own static files, not a CDN
    "memoryadmin.observability",
    "memoryadmin.facts",
    "memoryadmin.extraction",
    "memoryadmin.access",
    "memoryadmin.usage",
    "memoryadmin.api",
    "memoryadmin.staff",
    "memoryadmin.portal",
    "memoryadmin.privacy",
]

MIDDLEWARE = [
    # First: the request id for every line below, and the agent's request timing (metrics).
    "memoryadmin.observability.requestid.RequestIdMiddleware",
    # Before Django's HTTPS redirect: the agent API is never redirected (a client re-sends a
    # redirected PUT as a GET, losing the write); it answers a JSON 403 `https_required`.
    "memoryadmin.middleware.ApiHttpsRequiredMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files are answered here, before sessions and the rest: cheap, cacheable, no cookies.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "memoryadmin.middleware.NoStoreMiddleware",
    "csp.middleware.CSPMiddleware",
    # Sessions, the staff user and messages are Django's own, skipped under /api/: the agent API
    # authenticates each request with a bearer token and never has a session (middleware.py).
    "memoryadmin.middleware.BrowserSessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "memoryadmin.middleware.StripNulQueryMiddleware",
    # Every view under /api/ is CSRF-exempt (no cookies there); kept for every other page.
    "django.middleware.csrf.CsrfViewMiddleware",
    "memoryadmin.middleware.BrowserAuthenticationMiddleware",
    "memoryadmin.staff.middleware.IdleTimeoutMiddleware",  # staff sessions; skips /api/
    "memoryadmin.staff.security.SecondFactorMiddleware",  # staff pages; skips /api/
    "memoryadmin.staff.sso.RecheckMiddleware",  # SSO sessions re-checked at the provider
    "memoryadmin.middleware.BrowserMessageMiddleware",
    "memoryadmin.portal.middleware.PortalLocaleMiddleware",  # /portal/ only; staff stay English
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks
]

ROOT_URLCONF = "memoryadmin.urls"
WSGI_APPLICATION = "memoryadmin.wsgi.application"
ASGI_APPLICATION = "memoryadmin.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "memoryadmin.staff.context.staff_nav",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

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
AUTHENTICATION_BACKENDS = [
    "memoryadmin.staff.security.WebLoginLockout",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("LOGIN_LOCKOUT_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one locks
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "memoryadmin.staff.security.lockout_response"
AXES_CLIENT_IP_CALLABLE = "memoryadmin.staff.security.client_ip"
# Proxies in front of gunicorn that append the client's address to X-Forwarded-For.
TRUSTED_PROXY_HOPS = int(os.environ.get("TRUSTED_PROXY_HOPS", "0"))
# Privacy admins pass a TOTP code after their password (memoryadmin.staff.security).
OTP_TOTP_ISSUER = "memoryadmin"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "staff:overview"
LOGOUT_REDIRECT_URL = "/login/?signed_out=1"  # the sign-in page then says so
# Staff sessions end after this many idle seconds: each request pushes the expiry forward.
# memoryadmin.staff.middleware.IdleTimeoutMiddleware slides the expiry at most once a minute
# (instead of SESSION_SAVE_EVERY_REQUEST, which would write the session row on every page).
SESSION_COOKIE_AGE = int(os.environ.get("STAFF_SESSION_IDLE_SECONDS", str(30 * 60)))

LANGUAGE_CODE = "en"
# The traveller portal speaks both; staff pages and the API are English only.
LANGUAGES = [("en", "English"), ("zh-hant", "繁體中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
# WhiteNoise serves STATIC_ROOT (filled by `collectstatic`) from the web process, compressed.
# Not the manifest variant: pages must render in tests and `make run` without a collectstatic.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- HTTP hardening. Production sets SECURE_COOKIES, SECURE_SSL_REDIRECT, SECURE_HSTS_SECONDS
# and, behind a TLS-terminating proxy, SECURE_PROXY_SSL_HEADER (README, "Deploying").
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"
CSRF_FAILURE_VIEW = "memoryadmin.api.errors.api_csrf_failure"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# The load balancer probes and Prometheus scrapes over plain HTTP, inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Trust X-Forwarded-Proto only when a proxy we control sets it (it is forgeable otherwise):
# the header is honoured only when BEHIND_TLS_PROXY=true says the app runs behind one.
# Value: the header as the proxy sends it, e.g. "X-Forwarded-Proto".
BEHIND_TLS_PROXY = env_bool("BEHIND_TLS_PROXY", False)
_PROXY_SSL_HEADER = os.environ.get("SECURE_PROXY_SSL_HEADER", "").strip()
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _PROXY_SSL_HEADER.upper().replace("-", "_"), "https")
    if _PROXY_SSL_HEADER and BEHIND_TLS_PROXY
    else None
)
USE_X_FORWARDED_HOST = env_bool("USE_X_FORWARDED_HOST", False)

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

# --- The traveller portal.
PORTAL_LINK_TTL_MINUTES = int(os.environ.get("PORTAL_LINK_TTL_MINUTES", "15"))
PORTAL_SESSION_IDLE_MINUTES = int(os.environ.get("PORTAL_SESSION_IDLE_MINUTES", "30"))
PORTAL_REDEEM_RATE = os.environ.get("PORTAL_REDEEM_RATE", "10/min")  # link openings per address
# Where travellers reach the portal, when it differs from the host the airline's backend calls.
PORTAL_BASE_URL = os.environ.get("PORTAL_BASE_URL", "").rstrip("/")
PORTAL_COOKIE_SECURE = env_bool("PORTAL_COOKIE_SECURE", not DEBUG)
# The zone portal times are shown in, by page language, when the link's issuer passed none:
# "language=Zone,language=Zone"; a language not named uses TIME_ZONE.
PORTAL_LANGUAGE_TIME_ZONES = dict(
    pair.strip().split("=", 1)
    for pair in os.environ.get("PORTAL_LANGUAGE_TIME_ZONES", "zh-hant=Asia/Taipei").split(",")
    if "=" in pair
)

# --- Celery: eager in-process when no broker is configured (the embedded default).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_RESULT_BACKEND = None
# A job's message is acknowledged only when the task ends: a worker killed mid-job (even its
# main process) leaves it unacknowledged, and Redis hands it out again after the visibility
# timeout. That timeout must outlast the longest job including its retry countdowns (which a
# worker holds unacknowledged), or Redis would deliver a healthy job twice.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TIMEZONE = TIME_ZONE
# `celery -A memoryadmin beat` runs these; each task is batched and safe to re-run.
CELERY_BEAT_SCHEDULE = {
    "purge-idempotency-records": {
        "task": "memoryadmin.api.tasks.purge_idempotency_records_task",
        "schedule": 3600.0,
    },
    "reap-extraction-jobs": {
        "task": "memoryadmin.extraction.tasks.reap_jobs_task",
        "schedule": float(os.environ.get("EXTRACTION_REAP_INTERVAL_SECONDS", "60")),
    },
    "fail-stale-extraction-jobs": {
        "task": "memoryadmin.extraction.tasks.fail_stale_jobs_task",
        "schedule": 900.0,
    },
    "purge-stale-portal-rows": {
        "task": "memoryadmin.portal.tasks.purge_stale_portal_rows_task",
        "schedule": 3600.0,
    },
}
# --- Retention: beat erases expired facts and old history in chunks, one transaction each.
RETENTION_SWEEP_INTERVAL_SECONDS = float(os.environ.get("RETENTION_SWEEP_INTERVAL_SECONDS", "3600"))
AUDIT_SWEEP_INTERVAL_SECONDS = float(os.environ.get("AUDIT_SWEEP_INTERVAL_SECONDS", "86400"))
RETENTION_SWEEP_CHUNK_SIZE = int(os.environ.get("RETENTION_SWEEP_CHUNK_SIZE", "1000"))
# Seconds between chunks when a worker re-queues a sweep (0: straight on).
RETENTION_SWEEP_PAUSE_SECONDS = float(os.environ.get("RETENTION_SWEEP_PAUSE_SECONDS", "0"))
CELERY_BEAT_SCHEDULE["sweep-expired-facts"] = {
    "task": "memoryadmin.facts.tasks.sweep_expired",
    "schedule": RETENTION_SWEEP_INTERVAL_SECONDS,
}
CELERY_BEAT_SCHEDULE["sweep-old-audit-events"] = {
    "task": "memoryadmin.facts.tasks.sweep_audit",
    "schedule": AUDIT_SWEEP_INTERVAL_SECONDS,
}
# --- Use receipts (issue 21): which facts the agent had in which turn. Kept this many days by
# default (a privacy admin changes it on the memory settings page), swept hourly.
MEMORY_USE_RETENTION_DAYS = int(os.environ.get("MEMORY_USE_RETENTION_DAYS", "90"))
CELERY_BEAT_SCHEDULE["sweep-expired-uses"] = {
    "task": "memoryadmin.usage.tasks.sweep_uses_task",
    "schedule": 3600.0,
}
# Receipts posted with a turn ride on its extraction job and are recorded by the job's task;
# those of jobs with no task (born skipped) or still waiting for the broker by this sweep.
CELERY_BEAT_SCHEDULE["record-waiting-uses"] = {
    "task": "memoryadmin.usage.tasks.record_waiting_uses_task",
    "schedule": float(os.environ.get("USAGE_RECORD_INTERVAL_SECONDS", "30")),
}
# Jobs still unfinished this long after their turn was posted fail (retryable) and their
# transcript goes: no conversation text waits forever, even through a day-long broker outage.
EXTRACTION_STALE_AFTER_MINUTES = int(os.environ.get("EXTRACTION_STALE_AFTER_MINUTES", "1440"))

# --- The model used for extraction (Anthropic Messages API).
ANTHROPIC_API_KEY = os.environ.get("ANTHROPIC_API_KEY", "")
ANTHROPIC_BASE_URL = os.environ.get("ANTHROPIC_BASE_URL", "") or None
ANTHROPIC_TIMEOUT_SECONDS = float(os.environ.get("ANTHROPIC_TIMEOUT_SECONDS", "30"))
# Transient model failures (429, 5xx, timeouts) are retried by the Celery task, at most 5 times,
# after base * 2^n seconds (capped); tests use a tiny base.
ANTHROPIC_RETRY_BACKOFF_SECONDS = float(os.environ.get("ANTHROPIC_RETRY_BACKOFF_SECONDS", "2"))
ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS = float(
    os.environ.get("ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS", "300")
)

# --- Turns are never lost (extraction.services.jobs_reap, on beat).
# A running job whose latest start is older than this has lost its worker: one model call (at
# most ANTHROPIC_TIMEOUT_SECONDS) and a few queries, with room to spare.
EXTRACTION_JOB_DEADLINE_SECONDS = int(
    os.environ.get("EXTRACTION_JOB_DEADLINE_SECONDS", str(int(2 * ANTHROPIC_TIMEOUT_SECONDS) + 60))
)
# A queued job the broker never got (it was down) is sent again this long after it was posted.
EXTRACTION_RESEND_AFTER_SECONDS = int(os.environ.get("EXTRACTION_RESEND_AFTER_SECONDS", "30"))
# How many times a job is handed to the broker before the reaper gives up on it.
EXTRACTION_MAX_SENDS = int(os.environ.get("EXTRACTION_MAX_SENDS", "3"))
# The longest a job can hold its message: the longest retry countdown plus a run.
BROKER_VISIBILITY_TIMEOUT_SECONDS = int(
    os.environ.get(
        "BROKER_VISIBILITY_TIMEOUT_SECONDS",
        str(max(900, int(ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS) + EXTRACTION_JOB_DEADLINE_SECONDS)),
    )
)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": BROKER_VISIBILITY_TIMEOUT_SECONDS}
# Publishing while the broker is down fails within about a second (the job stays queued and the
# reaper sends it later) instead of holding the agent host's request.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}

# --- The shared cache: throttle counts and anything else two web processes must agree on.
# Redis when CACHE_URL is set or the broker is Redis; process-local memory on the embedded
# default (one process, nothing to share).
CACHE_URL = os.environ.get("CACHE_URL", "") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else ""
)
if CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": "memoryadmin",
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Redis is never what keeps the service up (memoryadmin/sharedcache.py): after a failed call,
# the throttles count per process and leave Redis alone for this many seconds.
CACHE_RETRY_SECONDS = float(os.environ.get("CACHE_RETRY_SECONDS", "5"))

# --- Per-process caches on the agent's hot path. A change made in this process is seen at once;
# other processes (gunicorn workers, Celery) see it within this many seconds.
MEMORY_CONFIG_CACHE_SECONDS = float(os.environ.get("MEMORY_CONFIG_CACHE_SECONDS", "5"))
API_TOKEN_CACHE_SECONDS = float(os.environ.get("API_TOKEN_CACHE_SECONDS", "5"))
# DjangoMemoryStore serves the agent's reads on a native async psycopg pool (no thread hop) when
# the database is PostgreSQL; the tests turn it off where they need to see their own transaction.
MEMORY_STORE_NATIVE_ASYNC = env_bool("MEMORY_STORE_NATIVE_ASYNC", True)
MEMORY_STORE_POOL_SIZE = int(os.environ.get("MEMORY_STORE_POOL_SIZE", "4"))
# The agent's fixed statements run as prepared statements (planned once per connection). Turn
# off behind a transaction-mode pooler (pgbouncer) that cannot keep them.
MEMORY_PREPARED_STATEMENTS = env_bool("MEMORY_PREPARED_STATEMENTS", True)

# --- The agent-facing API.
# Per service token; a token's own rate (ServiceToken.throttle_rate) overrides it.
API_THROTTLE_RATE = os.environ.get("API_THROTTLE_RATE", "600/min")
# On Redis a process may take up to this many numbers of a token's count at once (never more than
# 1% of its limit), so a busy token does not pay a Redis round trip per request; 1: every request.
API_THROTTLE_LEASE_MAX = int(os.environ.get("API_THROTTLE_LEASE_MAX", "50"))
API_IDEMPOTENCY_TTL_HOURS = int(os.environ.get("API_IDEMPOTENCY_TTL_HOURS", "24"))
API_HEALTH_BROKER_TIMEOUT_SECONDS = float(os.environ.get("API_HEALTH_BROKER_TIMEOUT_SECONDS", "2"))
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Secure by default: every DRF view needs a valid service token unless it says otherwise;
    # add `permission_classes = [scope_required("...")]` to require a scope.
    "DEFAULT_AUTHENTICATION_CLASSES": ["memoryadmin.api.auth.ServiceTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["memoryadmin.api.permissions.HasScope"],
    "DEFAULT_THROTTLE_CLASSES": ["memoryadmin.api.throttling.TokenRateThrottle"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memoryadmin.api.parsers.SafeJSONParser"],
    "DEFAULT_METADATA_CLASS": None,
    "EXCEPTION_HANDLER": "memoryadmin.api.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "memoryadmin agent API",
    "DESCRIPTION": (
        "What the airline agent remembers about each traveller: read, write, search, erase.\n\n"
        "Authenticate with a service token: `Authorization: Bearer <token>`; each operation "
        "names the scope it needs. Every error has one shape: "
        '`{"error": {"code": "...", "message": "...", "fields": {"field": "why"}}}`. '
        "Writes accept an `Idempotency-Key` header; single facts carry an ETag for If-Match."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "CategoryEnum": "memoryadmin.facts.models.Category",
        "HeldFactStatusEnum": ["pending_review", "not_visible"],
        "JobStatusEnum": "memoryadmin.extraction.models.JobStatus",
    },
}

# Text by default (`make run`); LOG_FORMAT=json: one JSON object per line from web, worker and
# beat. Every line carries the request id (memoryadmin/observability/logs.py).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "text")
LOGGING_CONFIG = "memoryadmin.observability.logs.configure"
LOGGING = logging_config(log_format=LOG_FORMAT, level=os.environ.get("LOG_LEVEL", "INFO"))

# --- Metrics (memoryadmin/observability/): /metrics for these networks (CIDRs or addresses,
# comma-separated) or for `Authorization: Bearer <METRICS_TOKEN>`; both empty: nobody.
METRICS_ALLOWED_NETWORKS = env_list("METRICS_ALLOWED_NETWORKS")
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
# The database gauges (facts, queue age, sweep lag, privacy requests due) are read at most this
# often, however many scrapes come (shared through the cache).
METRICS_GAUGE_REFRESH_SECONDS = int(os.environ.get("METRICS_GAUGE_REFRESH_SECONDS", "60"))

# --- Staff single sign-on (OpenID Connect, mozilla-django-oidc; memoryadmin/staff/sso.py).
# Configured when OIDC_ISSUER is set: the endpoints come from its discovery document.
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "").rstrip("/")
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "")
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = os.environ.get("OIDC_SCOPES", "openid email profile groups")
# The claim that lists the person's groups, and which group gives which staff role.
OIDC_GROUPS_CLAIM = os.environ.get("OIDC_GROUPS_CLAIM", "groups")
OIDC_ROLE_MAP = os.environ.get(
    "OIDC_ROLE_MAP",
    "memory-viewers=viewer,memory-editors=editor,memory-privacy=privacy_admin",
)
# `amr` values that count as a second factor for privacy admins.
OIDC_MFA_AMR = env_list("OIDC_MFA_AMR", "mfa,otp,hwk")
OIDC_CLOCK_SKEW_SECONDS = int(os.environ.get("OIDC_CLOCK_SKEW_SECONDS", "60"))
OIDC_USE_NONCE = True
OIDC_USE_PKCE = True
OIDC_TIMEOUT = float(os.environ.get("OIDC_TIMEOUT_SECONDS", "5"))
OIDC_STORE_ID_TOKEN = False
OIDC_CREATE_USER = True
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
LOGIN_REDIRECT_URL_FAILURE = "/login/"
# An SSO session goes back to the provider (silently, prompt=none) this often, so a person removed
# from the airline's groups loses access within the staff idle timeout.
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = int(
    os.environ.get("OIDC_RECHECK_SECONDS", str(min(SESSION_COOKIE_AGE, 15 * 60)))
)
OIDC_EXEMPT_URLS = ["login", "logout", "otp-verify"]
if OIDC_ISSUER:
    AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, "memoryadmin.staff.sso.StaffOIDCBackend"]
# Local password accounts are break-glass accounts once SSO is configured: off unless turned on.
STAFF_PASSWORD_LOGIN = env_bool("STAFF_PASSWORD_LOGIN", not OIDC_ISSUER)

# --- The staff access record (memoryadmin/access/).
STAFF_ACCESS_RECORDING = env_bool("STAFF_ACCESS_RECORDING", True)
STAFF_ACCESS_RETENTION_DAYS = int(os.environ.get("STAFF_ACCESS_RETENTION_DAYS", "400"))
# "Unusual access": a staff member who opened more than this many travellers in one hour,
# looked for over the last STAFF_ACCESS_UNUSUAL_DAYS days.
STAFF_ACCESS_UNUSUAL_PER_HOUR = int(os.environ.get("STAFF_ACCESS_UNUSUAL_PER_HOUR", "30"))
STAFF_ACCESS_UNUSUAL_DAYS = int(os.environ.get("STAFF_ACCESS_UNUSUAL_DAYS", "7"))
CELERY_BEAT_SCHEDULE["sweep-staff-access-record"] = {
    "task": "memoryadmin.access.tasks.sweep_access_record",
    "schedule": 86400.0,
}

# --- Privacy requests and erasure propagation (memoryadmin/privacy/).
# Due dates of privacy requests are counted and shown in the airline's time zone.
PRIVACY_TIME_ZONE = os.environ.get("PRIVACY_TIME_ZONE", "Asia/Taipei")
# Webhook delivery: first retry after the base, doubling up to the cap, for 3 days.
WEBHOOK_RETRY_BASE_SECONDS = float(os.environ.get("WEBHOOK_RETRY_BASE_SECONDS", "60"))
WEBHOOK_RETRY_MAX_SECONDS = float(os.environ.get("WEBHOOK_RETRY_MAX_SECONDS", "21600"))
WEBHOOK_TIMEOUT_SECONDS = float(os.environ.get("WEBHOOK_TIMEOUT_SECONDS", "10"))
# Beat dispatches what the store's native erasures wrote and re-sends retries this late.
WEBHOOK_SWEEP_INTERVAL_SECONDS = float(os.environ.get("WEBHOOK_SWEEP_INTERVAL_SECONDS", "30"))
WEBHOOK_RETRY_GRACE_SECONDS = float(os.environ.get("WEBHOOK_RETRY_GRACE_SECONDS", "120"))
CELERY_BEAT_SCHEDULE["webhook-dispatch-and-retry"] = {
    "task": "memoryadmin.privacy.tasks.webhook_retry_due_task",
    "schedule": WEBHOOK_SWEEP_INTERVAL_SECONDS,
}
# The outbox and the delivery log are kept this many days after an event was written (once its
# deliveries are settled); an erasure request keeps each recipient's outcome in its evidence.
WEBHOOK_LOG_RETENTION_DAYS = int(os.environ.get("WEBHOOK_LOG_RETENTION_DAYS", "90"))
CELERY_BEAT_SCHEDULE["sweep-webhook-log"] = {
    "task": "memoryadmin.privacy.tasks.webhook_log_sweep_task",
    "schedule": 86400.0,
}

# --- Fenced speed tricks (memoryadmin/fastpaths/, docs/ARCHITECTURE.md "Fenced speed tricks").
# Each reaches into another library's private names for speed; `false` turns it off and that
# code path uses the library's public API instead (slower, the same answers). Read on every
# call. A trick that finds its library changed turns itself off and logs one warning.
FASTPATH_DJANGO_CURSOR = env_bool("FASTPATH_DJANGO_CURSOR", True)
FASTPATH_REDIS_CLIENT = env_bool("FASTPATH_REDIS_CLIENT", True)
FASTPATH_API_LEAN_GET = env_bool("FASTPATH_API_LEAN_GET", True)
