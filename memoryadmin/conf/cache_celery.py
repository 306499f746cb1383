"""Celery (the broker, beat's schedule, the sweeps it runs) and the shared cache.

No CELERY_BROKER_URL: tasks run eagerly in the web process (one process, nothing to hand off),
and the cache is process-local memory.
"""

import tempfile
from pathlib import Path

from memoryadmin.conf.env import env
from memoryadmin.conf.extraction import (
    ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS,
    EXTRACTION_JOB_DEADLINE_SECONDS,
)
from memoryadmin.conf.privacy import WEBHOOK_SWEEP_INTERVAL_SECONDS
from memoryadmin.conf.quality import QUALITY_DRAW_INTERVAL_SECONDS

CELERY_BROKER_URL = env.url_str("CELERY_BROKER_URL", default="")
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
# The longest a job can hold its message: the longest retry countdown plus a run.
BROKER_VISIBILITY_TIMEOUT_SECONDS = env.int(
    "BROKER_VISIBILITY_TIMEOUT_SECONDS",
    default=max(900, int(ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS) + EXTRACTION_JOB_DEADLINE_SECONDS),
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

# --- Retention: beat erases expired facts and old history in chunks, one transaction each.
RETENTION_SWEEP_INTERVAL_SECONDS = env.float("RETENTION_SWEEP_INTERVAL_SECONDS", default=3600.0)
AUDIT_SWEEP_INTERVAL_SECONDS = env.float("AUDIT_SWEEP_INTERVAL_SECONDS", default=86400.0)
RETENTION_SWEEP_CHUNK_SIZE = env.int("RETENTION_SWEEP_CHUNK_SIZE", default=1000)
# Seconds between chunks when a worker re-queues a sweep (0: straight on).
RETENTION_SWEEP_PAUSE_SECONDS = env.float("RETENTION_SWEEP_PAUSE_SECONDS", default=0.0)
# How often beat re-sends lost extraction jobs, and records the use receipts of turns whose job
# has no task (born skipped) or still waits for the broker.
EXTRACTION_REAP_INTERVAL_SECONDS = env.float("EXTRACTION_REAP_INTERVAL_SECONDS", default=60.0)
USAGE_RECORD_INTERVAL_SECONDS = env.float("USAGE_RECORD_INTERVAL_SECONDS", default=30.0)

# Where beat keeps when each task last ran: outside the source tree (Celery's own default is
# `celerybeat-schedule` in the working directory), unless BEAT_SCHEDULE_FILE or `--schedule`
# says where.
CELERY_BEAT_SCHEDULE_FILENAME = env.str(
    "BEAT_SCHEDULE_FILE",
    default=str(Path(tempfile.gettempdir()) / "memoryadmin-celerybeat-schedule"),
)
# `celery -A memoryadmin beat` runs these; each task is batched and safe to re-run.
CELERY_BEAT_SCHEDULE = {
    "purge-idempotency-records": {
        "task": "memoryadmin.api.tasks.purge_idempotency_records_task",
        "schedule": 3600.0,
    },
    "reap-extraction-jobs": {
        "task": "memoryadmin.extraction.tasks.reap_jobs_task",
        "schedule": EXTRACTION_REAP_INTERVAL_SECONDS,
    },
    "fail-stale-extraction-jobs": {
        "task": "memoryadmin.extraction.tasks.fail_stale_jobs_task",
        "schedule": 900.0,
    },
    "purge-stale-portal-rows": {
        "task": "memoryadmin.portal.tasks.purge_stale_portal_rows_task",
        "schedule": 3600.0,
    },
    "sweep-expired-facts": {
        "task": "memoryadmin.facts.tasks.sweep_expired",
        "schedule": RETENTION_SWEEP_INTERVAL_SECONDS,
    },
    # The append-only tables' month partitions: made one month ahead, strays
    # moved out of the default partition, months past their retention dropped.
    "partitions-upkeep": {
        "task": "memoryadmin.facts.tasks.partitions_upkeep_task",
        "schedule": 3600.0,
    },
    "sweep-old-audit-events": {
        "task": "memoryadmin.facts.tasks.sweep_audit",
        "schedule": AUDIT_SWEEP_INTERVAL_SECONDS,
    },
    # Use receipts past their retention (MEMORY_USE_RETENTION_DAYS or the settings page).
    "sweep-expired-uses": {
        "task": "memoryadmin.usage.tasks.sweep_uses_task",
        "schedule": 3600.0,
    },
    # Receipts posted with a turn ride on its extraction job and are recorded by the job's task;
    # those of jobs with no task (born skipped) or still waiting for the broker by this sweep.
    "record-waiting-uses": {
        "task": "memoryadmin.usage.tasks.record_waiting_uses_task",
        "schedule": USAGE_RECORD_INTERVAL_SECONDS,
    },
    # Staff access rows older than STAFF_ACCESS_RETENTION_DAYS.
    "sweep-staff-access-record": {
        "task": "memoryadmin.access.tasks.sweep_access_record",
        "schedule": 86400.0,
    },
    "webhook-dispatch-and-retry": {
        "task": "memoryadmin.privacy.tasks.webhook_retry_due_task",
        "schedule": WEBHOOK_SWEEP_INTERVAL_SECONDS,
    },
    # The webhook outbox and delivery log past WEBHOOK_LOG_RETENTION_DAYS.
    "sweep-webhook-log": {
        "task": "memoryadmin.privacy.tasks.webhook_log_sweep_task",
        "schedule": 86400.0,
    },
    # The weekly sample of learned facts for reviewers to mark.
    "quality-sample-draw": {
        "task": "memoryadmin.quality.tasks.quality_draw_task",
        "schedule": QUALITY_DRAW_INTERVAL_SECONDS,
    },
}

# --- The shared cache: throttle counts and anything else two web processes must agree on.
# Redis when CACHE_URL is set or the broker is Redis; process-local memory otherwise (one
# process, nothing to share).
CACHE_URL = env.url_str("CACHE_URL", default="") or (
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
# Redis is never what keeps the service up (memoryadmin/db/redis.py): after a failed call,
# the throttles count per process and leave Redis alone for this many seconds.
CACHE_RETRY_SECONDS = env.float("CACHE_RETRY_SECONDS", default=5.0)
