"""The traveller's side: the portal, privacy requests, erasure webhooks, use receipts."""

from memoryadmin.conf.env import env
from memoryadmin.conf.security import DEBUG

# --- The traveller portal.
PORTAL_LINK_TTL_MINUTES = env.int("PORTAL_LINK_TTL_MINUTES", default=15)
PORTAL_SESSION_IDLE_MINUTES = env.int("PORTAL_SESSION_IDLE_MINUTES", default=30)
PORTAL_REDEEM_RATE = env.rate("PORTAL_REDEEM_RATE", default="10/min")  # link openings per address
# Where travellers reach the portal, when it differs from the host the airline's backend calls.
PORTAL_BASE_URL = env.url_str("PORTAL_BASE_URL", default="").rstrip("/")
PORTAL_COOKIE_SECURE = env.bool("PORTAL_COOKIE_SECURE", default=not DEBUG)

# --- Privacy requests and erasure propagation (memoryadmin/privacy/).
# Due dates of privacy requests are counted in the one TIME_ZONE (conf/time_zone.py).
# Webhook delivery: first retry after the base, doubling up to the cap, for 3 days.
WEBHOOK_RETRY_BASE_SECONDS = env.float("WEBHOOK_RETRY_BASE_SECONDS", default=60.0)
WEBHOOK_RETRY_MAX_SECONDS = env.float("WEBHOOK_RETRY_MAX_SECONDS", default=21600.0)
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)
# Beat dispatches what the store's native erasures wrote and re-sends retries this late. With
# no broker (tasks in-process, `make run`) no worker holds a retry's countdown: the sweep is what
# retries, as soon as a retry is due.
WEBHOOK_SWEEP_INTERVAL_SECONDS = env.float("WEBHOOK_SWEEP_INTERVAL_SECONDS", default=30.0)
WEBHOOK_RETRY_GRACE_SECONDS = env.float(
    "WEBHOOK_RETRY_GRACE_SECONDS",
    default=120.0 if env.url_str("CELERY_BROKER_URL", default="") else 0.0,
)
# The outbox and the delivery log are kept this many days after an event was written (once its
# deliveries are settled); an erasure request keeps each recipient's outcome in its evidence.
WEBHOOK_LOG_RETENTION_DAYS = env.int("WEBHOOK_LOG_RETENTION_DAYS", default=90)

# --- Use receipts: which facts the agent had in which turn. Kept this many days by
# default (a privacy admin changes it on the memory settings page), swept hourly.
MEMORY_USE_RETENTION_DAYS = env.int("MEMORY_USE_RETENTION_DAYS", default=90)
