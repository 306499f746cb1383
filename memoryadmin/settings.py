"""The settings entry point (DJANGO_SETTINGS_MODULE). Everything that differs between a laptop and
production is an environment variable, read through the typed reader in memoryadmin/conf/env.py
(a bad value names its variable); the settings of each concern live in memoryadmin/conf/ and are
imported here by name. DATABASE_URL is required (PostgreSQL; `make run` and `make test` set it).
Each setting has its one default where it is read: code reads `settings.X`, never
`getattr(settings, "X", default)` (tests/test_settings.py checks).
"""

from pathlib import Path

from memoryadmin.conf.cache_celery import (
    AUDIT_SWEEP_INTERVAL_SECONDS,
    BROKER_VISIBILITY_TIMEOUT_SECONDS,
    CACHE_RETRY_SECONDS,
    CACHE_URL,
    CACHES,
    CELERY_BEAT_SCHEDULE,
    CELERY_BEAT_SCHEDULE_FILENAME,
    CELERY_BROKER_CONNECTION_TIMEOUT,
    CELERY_BROKER_TRANSPORT_OPTIONS,
    CELERY_BROKER_URL,
    CELERY_RESULT_BACKEND,
    CELERY_TASK_ACKS_LATE,
    CELERY_TASK_ALWAYS_EAGER,
    CELERY_TASK_EAGER_PROPAGATES,
    CELERY_TASK_PUBLISH_RETRY_POLICY,
    CELERY_TASK_REJECT_ON_WORKER_LOST,
    CELERY_WORKER_PREFETCH_MULTIPLIER,
    EXTRACTION_REAP_INTERVAL_SECONDS,
    RETENTION_SWEEP_CHUNK_SIZE,
    RETENTION_SWEEP_INTERVAL_SECONDS,
    RETENTION_SWEEP_PAUSE_SECONDS,
    USAGE_RECORD_INTERVAL_SECONDS,
)
from memoryadmin.conf.database import (
    DATABASE_LOCKED_FUNCTIONS,
    DATABASE_PLAN_IN_LOCK,
    DATABASE_POOLER,
    DATABASE_PREPARED_WRITES,
    DATABASE_READ_YOUR_WRITES_SECONDS,
    DATABASE_REPLICA_CHECK_SECONDS,
    DATABASE_REPLICA_MAX_LAG_SECONDS,
    DATABASE_REPLICA_POSITION_WATCH_SECONDS,
    DATABASE_REPLICAS,
    DATABASE_ROUTERS,
    DATABASES,
    DEFAULT_AUTO_FIELD,
    MEMORY_PREPARED_STATEMENTS,
    MEMORY_STORE_NATIVE_ASYNC,
    MEMORY_STORE_POOL_SIZE,
)
from memoryadmin.conf.env import env, env_bool, env_list
from memoryadmin.conf.extraction import (
    ANTHROPIC_API_KEY,
    ANTHROPIC_BASE_URL,
    ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS,
    ANTHROPIC_RETRY_BACKOFF_SECONDS,
    ANTHROPIC_TIMEOUT_SECONDS,
    EXTRACTION_JOB_DEADLINE_SECONDS,
    EXTRACTION_MAX_SENDS,
    EXTRACTION_RESEND_AFTER_SECONDS,
    EXTRACTION_STALE_AFTER_MINUTES,
)
from memoryadmin.conf.fastpath import (
    FASTPATH_API_LEAN_GET,
    FASTPATH_DJANGO_CURSOR,
    FASTPATH_PYDANTIC_CONSTRUCT,
    FASTPATH_STORE_RESIDENT_CONNECTION,
)
from memoryadmin.conf.observability import (
    LOG_FORMAT,
    LOG_LEVEL,
    LOGGING,
    LOGGING_CONFIG,
    METRICS_ALLOWED_NETWORKS,
    METRICS_GAUGE_REFRESH_SECONDS,
    METRICS_TOKEN,
    METRICS_WORKER_BIND,
    METRICS_WORKER_PORT,
)
from memoryadmin.conf.privacy import (
    MEMORY_USE_RETENTION_DAYS,
    PORTAL_BASE_URL,
    PORTAL_COOKIE_SECURE,
    PORTAL_LINK_TTL_MINUTES,
    PORTAL_REDEEM_RATE,
    PORTAL_SESSION_IDLE_MINUTES,
    WEBHOOK_LOG_RETENTION_DAYS,
    WEBHOOK_RETRY_BASE_SECONDS,
    WEBHOOK_RETRY_GRACE_SECONDS,
    WEBHOOK_RETRY_MAX_SECONDS,
    WEBHOOK_SWEEP_INTERVAL_SECONDS,
    WEBHOOK_TIMEOUT_SECONDS,
)
from memoryadmin.conf.quality import QUALITY_SAMPLE_SIZE
from memoryadmin.conf.security import (
    ALLOWED_HOSTS,
    BEHIND_TLS_PROXY,
    CONTENT_SECURITY_POLICY,
    CONTENT_SECURITY_POLICY_REPORT_ONLY,
    CSRF_COOKIE_HTTPONLY,
    CSRF_COOKIE_SECURE,
    CSRF_FAILURE_VIEW,
    CSRF_TRUSTED_ORIGINS,
    DEBUG,
    DEV_SECRET_KEY,
    SECRET_KEY,
    SECRET_KEY_FALLBACKS,
    SECURE_CONTENT_TYPE_NOSNIFF,
    SECURE_HSTS_INCLUDE_SUBDOMAINS,
    SECURE_HSTS_PRELOAD,
    SECURE_HSTS_SECONDS,
    SECURE_PROXY_SSL_HEADER,
    SECURE_REDIRECT_EXEMPT,
    SECURE_REFERRER_POLICY,
    SECURE_SSL_REDIRECT,
    SESSION_COOKIE_HTTPONLY,
    SESSION_COOKIE_SECURE,
    TRUSTED_PROXY_HOPS,
    USE_X_FORWARDED_HOST,
    X_FRAME_OPTIONS,
)
from memoryadmin.conf.staff import (
    AUTH_PASSWORD_VALIDATORS,
    AUTHENTICATION_BACKENDS,
    AXES_CLIENT_IP_CALLABLE,
    AXES_COOLOFF_TIME,
    AXES_FAILURE_LIMIT,
    AXES_LOCKOUT_CALLABLE,
    AXES_LOCKOUT_PARAMETERS,
    AXES_RESET_ON_SUCCESS,
    LOGIN_REDIRECT_URL,
    LOGIN_REDIRECT_URL_FAILURE,
    LOGIN_URL,
    LOGOUT_REDIRECT_URL,
    OIDC_AUTHENTICATION_CALLBACK_URL,
    OIDC_CLOCK_SKEW_SECONDS,
    OIDC_CREATE_USER,
    OIDC_EXEMPT_URLS,
    OIDC_GROUPS_CLAIM,
    OIDC_ISSUER,
    OIDC_MFA_AMR,
    OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS,
    OIDC_ROLE_MAP,
    OIDC_RP_CLIENT_ID,
    OIDC_RP_CLIENT_SECRET,
    OIDC_RP_SCOPES,
    OIDC_RP_SIGN_ALGO,
    OIDC_STORE_ID_TOKEN,
    OIDC_TIMEOUT,
    OIDC_USE_NONCE,
    OIDC_USE_PKCE,
    OTP_TOTP_ISSUER,
    SESSION_COOKIE_AGE,
    STAFF_ACCESS_RECORDING,
    STAFF_ACCESS_RETENTION_DAYS,
    STAFF_ACCESS_UNUSUAL_DAYS,
    STAFF_ACCESS_UNUSUAL_PER_HOUR,
    STAFF_PASSWORD_LOGIN,
)
from memoryadmin.conf.time_zone import TIME_ZONE  # the one zone, every page's

BASE_DIR = Path(__file__).resolve().parent.parent

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
    "memoryadmin.quality",
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
    # After axes: it calls the staff page's view itself, on a read replica (facts/replicas.py).
    "memoryadmin.staff.middleware.ReplicaReadsMiddleware",
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

LANGUAGE_CODE = "en"
# The traveller portal speaks both; staff pages and the API are English only.
LANGUAGES = [("en", "English"), ("zh-hant", "繁體中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
FORMAT_MODULE_PATH = ["memoryadmin.formats"]  # English dates as "5 December 2026"
USE_I18N = True
USE_TZ = True
CELERY_TIMEZONE = TIME_ZONE  # beat's schedule (conf/cache_celery.py)

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
# WhiteNoise serves STATIC_ROOT (filled by `collectstatic`) from the web process, compressed.
# Not the manifest variant: pages must render in tests and `make run` without a collectstatic.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- The agent-facing API.
# Per-process caches on the agent's hot path. A change made in this process is seen at once;
# other processes (gunicorn workers, Celery) see it within this many seconds.
MEMORY_CONFIG_CACHE_SECONDS = env.float("MEMORY_CONFIG_CACHE_SECONDS", default=5.0)
API_TOKEN_CACHE_SECONDS = env.float("API_TOKEN_CACHE_SECONDS", default=5.0)
# Per service token; a token's own rate (ServiceToken.throttle_rate) overrides it.
API_THROTTLE_RATE = env.rate("API_THROTTLE_RATE", default="600/min")
# On Redis a process may take up to this many numbers of a token's count at once (never more than
# 1% of its limit), so a busy token does not pay a Redis round trip per request; 1: every request.
API_THROTTLE_LEASE_MAX = env.int("API_THROTTLE_LEASE_MAX", default=50)
API_IDEMPOTENCY_TTL_HOURS = env.int("API_IDEMPOTENCY_TTL_HOURS", default=24)
API_HEALTH_BROKER_TIMEOUT_SECONDS = env.float("API_HEALTH_BROKER_TIMEOUT_SECONDS", default=2.0)
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
