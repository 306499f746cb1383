"""Automatic learning: the model used for extraction (Anthropic Messages API) and its jobs."""

from memoryadmin.conf.env import env

ANTHROPIC_API_KEY = env.str("ANTHROPIC_API_KEY", default="")
ANTHROPIC_BASE_URL = env.url_str("ANTHROPIC_BASE_URL", default="") or None
ANTHROPIC_TIMEOUT_SECONDS = env.float("ANTHROPIC_TIMEOUT_SECONDS", default=30.0)
# Transient model failures (429, 5xx, timeouts) are retried by the Celery task, at most 5 times,
# after base * 2^n seconds (capped); tests use a tiny base.
ANTHROPIC_RETRY_BACKOFF_SECONDS = env.float("ANTHROPIC_RETRY_BACKOFF_SECONDS", default=2.0)
ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS = env.float(
    "ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS", default=300.0
)

# --- Turns are never lost (extraction.services.jobs_reap, on beat).
# A running job whose latest start is older than this has lost its worker: one model call (at
# most ANTHROPIC_TIMEOUT_SECONDS) and a few queries, with room to spare.
EXTRACTION_JOB_DEADLINE_SECONDS = env.int(
    "EXTRACTION_JOB_DEADLINE_SECONDS", default=int(2 * ANTHROPIC_TIMEOUT_SECONDS) + 60
)
# A queued job the broker never got (it was down) is sent again this long after it was posted.
EXTRACTION_RESEND_AFTER_SECONDS = env.int("EXTRACTION_RESEND_AFTER_SECONDS", default=30)
# How many times a job is handed to the broker before the reaper gives up on it.
EXTRACTION_MAX_SENDS = env.int("EXTRACTION_MAX_SENDS", default=3)
# Jobs still unfinished this long after their turn was posted fail (retryable) and their
# transcript goes: no conversation text waits forever, even through a day-long broker outage.
EXTRACTION_STALE_AFTER_MINUTES = env.int("EXTRACTION_STALE_AFTER_MINUTES", default=1440)
