"""Turn -> facts. `propose_facts` is the pure part (one model call, then validation, the write
filter, the sensitivity check, dedup and the cap); `extract_turn` wraps it with the job, the
subject's switches, the purge-generation check and the one write through `fact_upsert`.

Memory never fails a turn: whatever goes wrong ends up as a job status and a log line that
names no fact value.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
from django.conf import settings
from django.db import transaction

from memoryadmin.facts import selectors
from memoryadmin.facts import services as fact_services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactInvalid, FactLearningPaused
from memoryadmin.facts.validation import (
    MemoryWriteFilter,
    classify_sensitive,
    sanitize_text,
    validate_fact,
)

from . import selectors as job_selectors
from . import services
from .dedup import Verdict, judge, restates
from .models import ExtractionJob, JobStatus
from .prompts import RECORD_FACT_TOOL, RECORD_FACT_TOOL_NAME, airline_prompt

logger = logging.getLogger(__name__)

MAX_TOKENS = 600
TRANSCRIPT_MAX_CHARS = 8000
SPEAKERS = {"user": "User", "assistant": "Agent"}
DISCARDED_REASON = "discarded: memory was cleared during extraction"
PAUSED_DURING_REASON = "discarded: the traveller paused learning during extraction"


@dataclass(frozen=True)
class HeldFact:
    """A fact already stored for the subject, as the extractor sees it."""

    key: str
    value: str
    category: str
    status: str = "active"


@dataclass(frozen=True)
class ProposedFact:
    key: str
    value: str
    category: str
    sensitive: bool = False
    is_update: bool = False


@dataclass
class Proposal:
    """What one model call yielded, after every check; the counts explain what was dropped."""

    kept: list[ProposedFact] = field(default_factory=list)
    proposed: int = 0
    duplicates: int = 0
    blocked: int = 0
    sent_to_review: int = 0
    invalid: int = 0
    cut_by_cap: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""


# --- the request -------------------------------------------------------------------------------

def format_transcript(messages: Sequence[dict[str, str]]) -> str:
    """"User: ... / Agent: ..." lines, each message sanitized, cut to the most recent 8000 chars.

    Messages carry `role` ("user" or "assistant") and `text` (`content` is accepted too)."""
    lines = []
    for message in messages:
        speaker = SPEAKERS.get(str(message.get("role", "")).lower(), "Agent")
        text = message.get("text", message.get("content", ""))
        text = sanitize_text(text) if isinstance(text, str) else ""
        if text:
            lines.append(f"{speaker}: {text}")
    transcript = "\n".join(lines)
    return transcript[-TRANSCRIPT_MAX_CHARS:]


def format_held(held: Sequence[HeldFact]) -> str:
    if not held:
        return "(none)"
    return "\n".join(
        f"- {fact.key} ({fact.category}): {sanitize_text(fact.value)}" for fact in held
    )


def user_content(messages: Sequence[dict[str, str]], held: Sequence[HeldFact]) -> str:
    return (
        f"Already saved facts:\n{format_held(held)}\n\n"
        f"Conversation:\n{format_transcript(messages)}"
    )


# --- the pure pipeline -------------------------------------------------------------------------

def _tool_inputs(response: Any) -> list[Any]:
    """The input of every tool_use block; a block for another tool yields None (invalid)."""
    inputs = []
    for block in getattr(response, "content", None) or []:
        if getattr(block, "type", None) != "tool_use":
            continue
        inputs.append(block.input if block.name == RECORD_FACT_TOOL_NAME else None)
    return inputs


def review_proposals(
    inputs: Sequence[Any],
    *,
    held: Sequence[HeldFact],
    max_new_facts: int,
    blocked_patterns: Sequence[str] = (),
) -> Proposal:
    """Validation, write filter, sensitivity, dedup and cap over raw tool inputs (no I/O)."""
    proposal = Proposal(proposed=len(inputs))
    write_filter = MemoryWriteFilter(blocked_patterns)
    known = {fact.key: fact.value for fact in held}
    compare_with = [fact.value for fact in held]
    batch_keys: set[str] = set()
    survivors: list[ProposedFact] = []
    for raw in inputs:
        if not isinstance(raw, dict):
            proposal.invalid += 1
            continue
        try:
            clean = validate_fact(raw.get("key"), raw.get("value"), raw.get("category"))
        except FactInvalid:
            proposal.invalid += 1
            continue
        # The raw key too, as fact_upsert does: "a@b.com" normalizes to "a_b_com".
        raw_key = sanitize_text(raw["key"])
        if not write_filter.check(f"{raw_key} {clean.key}", clean.value).allowed:
            proposal.blocked += 1  # counted only: the value is neither kept nor logged
            continue
        if clean.key in batch_keys or any(
            restates(clean.value, other.value) for other in survivors if other.key != clean.key
        ):
            proposal.duplicates += 1
            continue
        verdict = judge(clean.key, clean.value, known, compare_with)
        if verdict is Verdict.DUPLICATE:
            proposal.duplicates += 1
            continue
        batch_keys.add(clean.key)
        survivors.append(
            ProposedFact(
                key=clean.key,
                value=clean.value,
                category=clean.category,
                sensitive=classify_sensitive(clean.key, clean.value) is not None,
                is_update=verdict is Verdict.UPDATE,
            )
        )
    cap = max(0, max_new_facts)
    proposal.kept = survivors[:cap]
    proposal.cut_by_cap = len(survivors) - len(proposal.kept)
    proposal.sent_to_review = sum(1 for fact in proposal.kept if fact.sensitive)
    return proposal


def propose_facts(
    *,
    client: anthropic.Anthropic,
    model: str,
    messages: list[dict[str, str]],
    held: list[HeldFact],
    max_new_facts: int = 3,
    blocked_patterns: Sequence[str] = (),
) -> Proposal:
    """One Messages call, then every check. No database: the benchmark calls it directly.

    API errors propagate (the caller decides what is transient)."""
    response = client.messages.create(
        model=model,
        max_tokens=MAX_TOKENS,
        system=airline_prompt(max_new_facts),
        tools=[RECORD_FACT_TOOL],
        messages=[{"role": "user", "content": user_content(messages, held)}],
    )
    proposal = review_proposals(
        _tool_inputs(response),
        held=held,
        max_new_facts=max_new_facts,
        blocked_patterns=blocked_patterns,
    )
    usage = getattr(response, "usage", None)
    proposal.input_tokens = int(getattr(usage, "input_tokens", 0) or 0)
    proposal.output_tokens = int(getattr(usage, "output_tokens", 0) or 0)
    proposal.model = getattr(response, "model", None) or model
    return proposal


# --- the job -----------------------------------------------------------------------------------

class TransientModelError(Exception):
    """The model API failed in a way worth retrying; `reason` names no fact value."""

    def __init__(self, reason: str, *, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


_TRANSIENT_STATUS = frozenset({408, 409, 429})


def _api_error_reason(exc: anthropic.APIError) -> str:
    """Status and error type only: an error body could quote what we sent."""
    if isinstance(exc, anthropic.APITimeoutError):
        return "model API timed out"
    if isinstance(exc, anthropic.APIConnectionError):
        return "model API unreachable"
    if isinstance(exc, anthropic.APIStatusError):
        kind = exc.type if isinstance(exc.type, str) else "error"
        return f"model API error: HTTP {exc.status_code} ({sanitize_text(kind)[:60]})"
    return f"model API error: {type(exc).__name__}"


def _retry_after(exc: anthropic.APIError) -> float | None:
    response = getattr(exc, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(header)) if header is not None else None
    except ValueError:
        return None


def is_transient(exc: anthropic.APIError) -> bool:
    if isinstance(exc, anthropic.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, anthropic.APIStatusError):
        return exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500
    return False


def skip_reason(subject_id: str) -> str | None:
    """Why nothing may be learned from this subject's turns right now, or None."""
    if not selectors.memory_settings().memory_enabled:
        return "memory is disabled"
    subject = selectors.subject_get(subject_id)
    if subject is not None and subject.memory_paused:
        return "the traveller paused learning"
    if not settings.ANTHROPIC_API_KEY:
        return "no model configured (ANTHROPIC_API_KEY is empty)"
    return None


def make_client() -> anthropic.Anthropic:
    """No SDK retries: the Celery task owns retrying, with its own backoff and attempt count."""
    return anthropic.Anthropic(
        api_key=settings.ANTHROPIC_API_KEY,
        base_url=settings.ANTHROPIC_BASE_URL,
        timeout=settings.ANTHROPIC_TIMEOUT_SECONDS,
        max_retries=0,
    )


class _Discard(Exception):
    """Rolls back a write that lost the race against a clear or a pause."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def extract_turn(job_id: int) -> ExtractionJob | None:
    """Run one job to its end. Raises TransientModelError only (for the task to retry); every
    other outcome is recorded on the job. A finished job is never run again."""
    job = services.job_start(job_id)
    if job is None:
        return None
    try:
        return _extract(job)
    except TransientModelError:
        raise
    except Exception as exc:  # memory never fails a turn
        logger.error("extraction job %s failed: %s", job.pk, type(exc).__name__)
        return services.job_finish(
            job.pk, status=JobStatus.FAILED, reason=f"internal error ({type(exc).__name__})"
        )


def _extract(job: ExtractionJob) -> ExtractionJob | None:
    # The generation first, the transcript second: a clear wipes transcripts and bumps the
    # generation in one transaction, so a transcript read after the generation either is gone
    # or belongs to a batch that _store will see was cleared.
    generation = selectors.purge_generation(job.subject_id)
    transcript = job_selectors.job_transcript(job.pk)
    reason = skip_reason(job.subject_id)
    if reason is None and not transcript:
        reason = "the transcript was erased before extraction"
    if reason is not None:
        logger.info("extraction job %s skipped: %s", job.pk, reason)
        return services.job_finish(job.pk, status=JobStatus.SKIPPED, reason=reason)

    held = [
        HeldFact(key=fact.key, value=fact.value, category=fact.category, status=fact.status)
        for fact in selectors.subject_facts(job.subject_id)
    ]
    memory = selectors.memory_settings()
    services.job_attempted(job.pk, model=memory.memory_model)
    try:
        with make_client() as client:  # closes its connection pool when the call is done
            proposal = propose_facts(
                client=client,
                model=memory.memory_model,
                messages=list(transcript or []),
                held=held,
                max_new_facts=memory.max_new_facts,
                blocked_patterns=list(memory.blocked_patterns or []),
            )
    except anthropic.APIError as exc:
        reason = _api_error_reason(exc)
        if is_transient(exc):
            raise TransientModelError(reason, retry_after=_retry_after(exc)) from None
        logger.warning("extraction job %s failed: %s", job.pk, reason)
        return services.job_finish(job.pk, status=JobStatus.FAILED, reason=reason)
    return _store(job, proposal, generation)


def _store(job: ExtractionJob, proposal: Proposal, generation: int) -> ExtractionJob | None:
    """Write the batch once, together with the job's end, unless a clear or pause got there
    first. The generation is re-read after fact_upsert has locked the subject row, so a clear
    committed at any moment before our commit is seen and the whole write rolls back; a pause
    is refused by fact_upsert itself (FactLearningPaused), under the same lock."""
    outcome = {
        "proposed": proposal.proposed,
        "duplicates": proposal.duplicates,
        "blocked": proposal.blocked,
        "invalid": proposal.invalid,
        "cut_by_cap": proposal.cut_by_cap,
        "model": proposal.model[:100],
        "input_tokens": proposal.input_tokens,
        "output_tokens": proposal.output_tokens,
    }
    try:
        with transaction.atomic():
            if services.job_lock_unfinished(job.pk) is None:
                return None  # another delivery of the same job finished it
            if selectors.purge_generation(job.subject_id) != generation:
                raise _Discard(DISCARDED_REASON)
            try:
                result = fact_services.fact_upsert(
                    subject_id=job.subject_id,
                    facts=[
                        fact_services.FactDraft(fact.key, fact.value, fact.category)
                        for fact in proposal.kept
                    ],
                    actor=Actor.extraction(f"extraction job {job.pk}"),
                    session_tag=job.session_tag,
                    reason=f"learned from turn {job.turn_id}",
                )
            except FactLearningPaused:
                raise _Discard(PAUSED_DURING_REASON) from None
            if selectors.purge_generation(job.subject_id) != generation:
                raise _Discard(DISCARDED_REASON)
            finished = services.job_finish(
                job.pk,
                status=JobStatus.SUCCEEDED,
                stored=len(result.created),
                updated=len(result.updated),
                sent_to_review=len(result.sent_to_review),
                **{**outcome, "duplicates": proposal.duplicates + len(result.unchanged)},
            )
    except _Discard as discard:
        logger.info("extraction job %s: %s", job.pk, discard.reason)
        return services.job_finish(
            job.pk, status=JobStatus.SUCCEEDED, reason=discard.reason, **outcome
        )
    if finished is not None:  # counts only, never values
        logger.info(
            "extraction job %s succeeded: proposed=%d stored=%d updated=%d duplicates=%d "
            "blocked=%d invalid=%d to_review=%d",
            job.pk, finished.proposed, finished.stored, finished.updated, finished.duplicates,
            finished.blocked, finished.invalid, finished.sent_to_review,
        )
    return finished
