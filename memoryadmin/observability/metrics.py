"""The process metrics: counters and the agent's latency histogram, and the small functions the
apps call to count. Nothing here touches the database or a network: recording costs a dict
lookup and, under gunicorn or a prefork worker, a write to a memory-mapped file.

Across processes (gunicorn workers, Celery's pool) prometheus-client's multiprocess mode adds
them up; it is on when PROMETHEUS_MULTIPROC_DIR is set before this module is imported
(gunicorn.conf.py and memoryadmin/celery.py see to it).

No label ever holds a traveller id, a key or a value: every label value below comes from a
fixed vocabulary, and anything else is counted as "other"."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

# The agent's operations, by (URL name, method). `api-usage` is the use receipts' endpoint: it
# is counted as soon as a route of that name exists.
OPERATIONS: dict[tuple[str, str], str] = {
    ("api-tier-one", "GET"): "tier_one",
    ("api-facts", "GET"): "list",
    ("api-facts", "PUT"): "upsert",
    ("api-facts-search", "GET"): "search",
    ("api-fact", "GET"): "get",
    ("api-fact", "PUT"): "upsert",
    ("api-fact", "DELETE"): "delete",
    ("api-turns", "POST"): "turn",
    ("api-usage", "GET"): "usage",
    ("api-usage", "POST"): "usage",
}
OTHER = "other"

JOB_OUTCOMES = ("succeeded", "failed", "skipped", "discarded")
FACT_RESULTS = ("stored", "duplicate", "blocked", "held_for_review", "over_cap")
ERASURE_PATHS = ("agent", "staff", "traveller", "extraction", "retention_sweep", "clear", "system")
FILTER_SOURCES = ("agent", "staff", "traveller", "extraction", "import", "system")
WEBHOOK_OUTCOMES = ("delivered", "failed", "gave_up")

# Tier one should answer in a few milliseconds; the alert fires at a p99 of 50 ms.
LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.0075,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)

AGENT_REQUEST_SECONDS = Histogram(
    "memoryadmin_agent_request_seconds",
    "Time to answer an agent API request, from the first middleware to the last.",
    ["operation", "status"],
    buckets=LATENCY_BUCKETS,
)
EXTRACTION_JOBS = Counter(
    "memoryadmin_extraction_jobs_total",
    "Extraction jobs that ended, by outcome.",
    ["outcome"],
)
EXTRACTION_FACTS = Counter(
    "memoryadmin_extraction_facts_total",
    "Facts the model proposed, by what became of them.",
    ["result"],
)
ERASURES = Counter(
    "memoryadmin_erasures_total",
    "Facts erased, by the path that erased them.",
    ["path"],
)
WRITE_FILTER_BLOCKED = Counter(
    "memoryadmin_write_filter_blocked_total",
    "Writes the memory write filter refused, by where they came from.",
    ["source"],
)
WEBHOOK_DELIVERIES = Counter(
    "memoryadmin_webhook_deliveries_total",
    "Webhook delivery attempts, by outcome.",
    ["outcome"],
)

_request_children: dict[tuple[str, str], object] = {}


def _known(value: str, allowed: tuple[str, ...]) -> str:
    return value if value in allowed else OTHER


def operation_for(url_name: str | None, method: str) -> str:
    """The `operation` label of an agent request (a fixed name, never the path)."""
    return OPERATIONS.get((url_name or "", method), OTHER)


def observe_agent_request(operation: str, status: int, seconds: float) -> None:
    """On every agent request: one dict lookup and one histogram observation."""
    key = (operation, str(status))
    child = _request_children.get(key)
    if child is None:
        child = _request_children[key] = AGENT_REQUEST_SECONDS.labels(*key)
    child.observe(seconds)  # type: ignore[attr-defined]


def count_extraction_job(outcome: str) -> None:
    EXTRACTION_JOBS.labels(_known(outcome, JOB_OUTCOMES)).inc()


def count_extraction_facts(result: str, amount: int) -> None:
    if amount > 0:
        EXTRACTION_FACTS.labels(_known(result, FACT_RESULTS)).inc(amount)


def count_erasures(path: str, amount: int = 1) -> None:
    if amount > 0:
        ERASURES.labels(_known(path, ERASURE_PATHS)).inc(amount)


def count_write_filter_blocked(source: str, amount: int = 1) -> None:
    if amount > 0:
        WRITE_FILTER_BLOCKED.labels(_known(source, FILTER_SOURCES)).inc(amount)


def count_webhook_delivery(outcome: str) -> None:
    """For the erasure webhooks: call once per delivery attempt, with "delivered",
    "failed" (will be retried) or "gave_up" (no retry left)."""
    WEBHOOK_DELIVERIES.labels(_known(outcome, WEBHOOK_OUTCOMES)).inc()


# Label values that exist from the start (each at 0), so a rate() over them is defined before
# the first event: Prometheus cannot tell "none yet" from "not exported".
def _declare_zeroes() -> None:
    for outcome in JOB_OUTCOMES:
        EXTRACTION_JOBS.labels(outcome)
    for result in FACT_RESULTS:
        EXTRACTION_FACTS.labels(result)
    for outcome in WEBHOOK_OUTCOMES:
        WEBHOOK_DELIVERIES.labels(outcome)


_declare_zeroes()
