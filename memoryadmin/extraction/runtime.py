"""Turn -> facts. `propose_facts` is the pure part (one model call, then validation, the write
filter, the sensitivity check, dedup and the cap); `extract_turn` wraps it with the job, the
subject's switches, the purge-generation check and the one write through `fact_upsert`.

Memory never fails a turn: whatever goes wrong ends up as a job status and a log line that
names no fact value.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction

from memoryadmin.facts import selectors
from memoryadmin.facts import services as fact_services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import (
    FactInvalid,
    FactLearningPaused,
    FactMemoryDisabled,
    WriteFilterMisconfigured,
)
from memoryadmin.facts.models import MemorySettings
from memoryadmin.facts.validation import (
    CleanFact,
    MemoryWriteFilter,
    blocked_pattern_errors,
    classify_sensitive,
    clean_evidence,
    normalize_value,
    sanitize_text,
    validate_fact,
)
from memoryadmin_client.prompt import render_memory_block, render_transcript_block

from . import selectors as job_selectors
from . import services
from .dedup import Prepared, Verdict, judge_prepared, prepare, restates_prepared
from .models import ExtractionJob, JobStatus
from .prompts import RECORD_FACT_TOOL, RECORD_FACT_TOOL_NAME, airline_prompt

if TYPE_CHECKING:
    import anthropic


def _sdk() -> Any:
    """The anthropic SDK, imported when a model call is due: importing it costs seconds of CPU,
    which every web process paid at start-up (the app registry loads the tasks) although only
    the worker calls the model, and a turn skipped for want of a key never needs it."""
    import anthropic

    return anthropic


logger = logging.getLogger(__name__)

MAX_TOKENS = 600
TRANSCRIPT_MAX_CHARS = 8000
SPEAKERS = {"user": "User", "assistant": "Agent"}
DISCARDED_REASON = "discarded: memory was cleared during extraction"
DISABLED_DURING_REASON = "discarded: memory was switched off during extraction"
FILTER_MISCONFIGURED_REASON = (
    "refused: the write filter has an invalid blocked pattern; nothing is learned until a "
    "privacy admin fixes it"
)
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
    evidence: str = ""  # the traveller's own words, checked against their messages; "" if none


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


def transcript_turns(messages: Sequence[dict[str, str]]) -> list[tuple[str, str]]:
    """(speaker, text) per message, each sanitized, keeping the most recent 8000 characters of
    text (the oldest kept message may be cut at its start).

    Messages carry `role` ("user" or "assistant") and `text` (`content` is accepted too)."""
    turns: list[tuple[str, str]] = []
    for message in messages:
        speaker = SPEAKERS.get(str(message.get("role", "")).lower(), "Agent")
        text = message.get("text", message.get("content", ""))
        text = sanitize_text(text) if isinstance(text, str) else ""
        if text:
            turns.append((speaker, text))
    kept: list[tuple[str, str]] = []
    budget = TRANSCRIPT_MAX_CHARS
    for speaker, text in reversed(turns):
        if budget <= 0:
            break
        kept.append((speaker, text[-budget:]))
        budget -= len(text)
    return kept[::-1]


def user_texts(messages: Sequence[dict[str, str]]) -> list[str]:
    """The traveller's own messages of the turn, cleaned: a fact's quote must come from one."""
    return [text for speaker, text in transcript_turns(messages) if speaker == SPEAKERS["user"]]


def format_transcript(messages: Sequence[dict[str, str]]) -> str:
    """The conversation as one delimited block of quoted data (see client/prompt.py): a turn
    that says "ignore your instructions" is something the traveller said, not an order."""
    return render_transcript_block(transcript_turns(messages))


def format_held(held: Sequence[HeldFact]) -> str:
    return render_memory_block(held)


def user_content(messages: Sequence[dict[str, str]], held: Sequence[HeldFact]) -> str:
    return (
        f"Already saved facts:\n{format_held(held)}\n\nConversation:\n{format_transcript(messages)}"
    )


# --- the pure pipeline -------------------------------------------------------------------------


def _tool_inputs(message: dict[str, Any]) -> list[Any]:
    """The input of every tool_use block; a block for another tool yields None (invalid)."""
    inputs = []
    for block in message.get("content") or []:
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        inputs.append(block.get("input") if block.get("name") == RECORD_FACT_TOOL_NAME else None)
    return inputs


def review_proposals(
    inputs: Sequence[Any],
    *,
    held: Sequence[HeldFact],
    max_new_facts: int,
    blocked_patterns: Sequence[str] = (),
    user_texts: Sequence[str] = (),
) -> Proposal:
    """Validation, write filter, sensitivity, dedup and cap over raw tool inputs (no I/O).

    Each fact's `evidence` quote is kept only when it is a literal part of one of `user_texts`
    (the traveller's messages), short and allowed by the write filter; a dropped quote never
    drops the fact.

    The same key twice in one batch: the last proposal wins (as in fact_upsert and upstream),
    keeping the key's first place. A held value that this batch replaces no longer counts when
    new keys are compared with what is held: it is about to be gone.

    Raises WriteFilterMisconfigured when a blocked pattern is unusable (the filter fails closed).
    """
    proposal = Proposal(proposed=len(inputs))
    write_filter = MemoryWriteFilter(blocked_patterns)
    candidates: dict[str, CleanFact] = {}
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
        if not write_filter.check(clean.key, clean.value, raw_key=raw_key).allowed:
            proposal.blocked += 1  # counted only: the value is neither kept nor logged
            continue
        if clean.key in candidates:
            proposal.duplicates += 1  # the earlier proposal under this key is superseded
        evidence = clean_evidence(
            raw.get("evidence"), write_filter=write_filter, sources=user_texts
        )
        candidates[clean.key] = CleanFact(clean.key, clean.value, clean.category, evidence)

    known = {fact.key: fact.value for fact in held}
    superseded = {
        key
        for key, clean in candidates.items()
        if key in known and normalize_value(known[key]) != normalize_value(clean.value)
    }
    compare_with = [prepare(fact.value) for fact in held if fact.key not in superseded]
    survivors: list[ProposedFact] = []
    kept_values: list[Prepared] = []
    for clean in candidates.values():
        value = prepare(clean.value)
        if any(restates_prepared(value, other) for other in kept_values):
            proposal.duplicates += 1
            continue
        verdict = judge_prepared(clean.key, value, known, compare_with)
        if verdict is Verdict.DUPLICATE:
            proposal.duplicates += 1
            continue
        kept_values.append(value)
        survivors.append(
            ProposedFact(
                key=clean.key,
                value=clean.value,
                category=clean.category,
                sensitive=classify_sensitive(clean.key, clean.value) is not None,
                is_update=verdict is Verdict.UPDATE,
                evidence=clean.evidence,
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
    # The answer as plain JSON: building the SDK's typed Message took about a tenth of a turn,
    # and only the tool calls, the usage and the model are read. Errors are raised as ever.
    answer = client.messages.with_raw_response.create(
        model=model,
        max_tokens=MAX_TOKENS,
        system=airline_prompt(max_new_facts),
        tools=[RECORD_FACT_TOOL],
        messages=[{"role": "user", "content": user_content(messages, held)}],
    ).json()
    message = answer if isinstance(answer, dict) else {}
    proposal = review_proposals(
        _tool_inputs(message),
        held=held,
        max_new_facts=max_new_facts,
        blocked_patterns=blocked_patterns,
        user_texts=user_texts(messages),
    )
    usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
    proposal.input_tokens = _count(usage.get("input_tokens"))
    proposal.output_tokens = _count(usage.get("output_tokens"))
    proposal.model = str(message.get("model") or model)
    return proposal


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


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
    anthropic = _sdk()
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
    anthropic = _sdk()
    if isinstance(exc, anthropic.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, anthropic.APIStatusError):
        return exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500
    return False


def make_client() -> anthropic.Anthropic:
    """No SDK retries: the Celery task owns retrying, with its own backoff and attempt count."""
    return _sdk().Anthropic(
        api_key=settings.ANTHROPIC_API_KEY,
        base_url=settings.ANTHROPIC_BASE_URL,
        timeout=settings.ANTHROPIC_TIMEOUT_SECONDS,
        max_retries=0,
    )


_client: tuple[tuple[Any, ...], anthropic.Anthropic] | None = None
_client_lock = threading.Lock()


def model_client() -> anthropic.Anthropic:
    """One client per process and configuration, reused turn after turn: building one loads the
    CA bundle (about 100 ms here, more than the rest of a turn) and a fresh client cannot reuse
    a connection. A changed configuration closes the old client."""
    global _client
    config = (
        settings.ANTHROPIC_API_KEY,
        settings.ANTHROPIC_BASE_URL,
        settings.ANTHROPIC_TIMEOUT_SECONDS,
    )
    with _client_lock:
        if _client is None or _client[0] != config:
            if _client is not None:
                _client[1].close()
            _client = (config, make_client())
        return _client[1]


class _Discard(Exception):
    """Rolls back a write that lost the race against a clear or a pause."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _may_call(memory: MemorySettings) -> bool:
    """The airline-wide conditions for calling the model: memory on, a model configured and a
    write filter that works (the per-subject ones are read with the job)."""
    return (
        bool(memory.memory_enabled)
        and bool(settings.ANTHROPIC_API_KEY)
        and not blocked_pattern_errors(list(memory.blocked_patterns or []))
    )


def extract_turn(job_id: int) -> ExtractionJob | None:
    """Run one job to its end. Raises TransientModelError only (for the task to retry); every
    other outcome is recorded on the job. A finished job is never run again.

    Two statements of bookkeeping around the fact write (`services.job_begin` before the call,
    `services.job_succeed` in the write's transaction); the settings come from the per-process
    cache."""
    memory = selectors.memory_settings()
    run = services.job_begin(job_id, may_call=_may_call(memory), model=memory.memory_model)
    if run is None:
        return None
    job = run.job
    if job.used is not None:  # the turn's use receipts rode with it: recorded first
        services.job_uses_take(job.pk)
    try:
        return _extract(run, memory)
    except TransientModelError:
        raise
    except WriteFilterMisconfigured:  # the patterns changed between the check and the write
        logger.error("extraction job %s refused: the write filter is misconfigured", job.pk)
        return services.job_finish(
            job.pk, status=JobStatus.FAILED, reason=FILTER_MISCONFIGURED_REASON
        )
    except Exception as exc:  # memory never fails a turn
        logger.error("extraction job %s failed: %s", job.pk, type(exc).__name__)
        return services.job_finish(
            job.pk, status=JobStatus.FAILED, reason=f"internal error ({type(exc).__name__})"
        )


def _skip_reason(run: services.JobRun, memory: MemorySettings) -> str | None:
    """`skip_reason`, and an erased transcript, from what job_begin read (same order)."""
    if not memory.memory_enabled:
        return "memory is disabled"
    if run.learning_paused:
        return "the traveller paused learning"
    if not settings.ANTHROPIC_API_KEY:
        return "no model configured (ANTHROPIC_API_KEY is empty)"
    transcript = run.job.transcript
    if not (isinstance(transcript, list) and transcript):
        return "the transcript was erased before extraction"
    return None


def _extract(run: services.JobRun, memory: MemorySettings) -> ExtractionJob | None:
    # job_begin read the generation and the transcript in one snapshot: a clear wipes
    # transcripts and bumps the generation in one transaction, so the transcript is either
    # gone or belongs to a batch that _store will see was cleared.
    job = run.job
    reason = _skip_reason(run, memory)
    if reason is not None:
        logger.info("extraction job %s skipped: %s", job.pk, reason)
        return services.job_finish(job.pk, status=JobStatus.SKIPPED, reason=reason)

    if MemoryWriteFilter(memory.blocked_patterns or []).invalid_patterns:
        # Fail closed, and before the transcript is sent anywhere (job_begin counted no attempt).
        logger.error("extraction job %s refused: the write filter is misconfigured", job.pk)
        return services.job_finish(
            job.pk, status=JobStatus.FAILED, reason=FILTER_MISCONFIGURED_REASON
        )
    _confirm_quotes(run, memory)
    held = [
        HeldFact(key=key, value=value, category=category, status=status)
        for key, value, category, status in run.held
    ]
    try:
        proposal = propose_facts(
            client=model_client(),
            model=memory.memory_model,
            messages=list(job.transcript),
            held=held,
            max_new_facts=memory.max_new_facts,
            blocked_patterns=list(memory.blocked_patterns or []),
        )
    except _sdk().APIError as exc:
        reason = _api_error_reason(exc)
        if is_transient(exc):
            raise TransientModelError(reason, retry_after=_retry_after(exc)) from None
        logger.warning("extraction job %s failed: %s", job.pk, reason)
        return services.job_finish(job.pk, status=JobStatus.FAILED, reason=reason)
    return _store(job, proposal, run.purge_generation)


def _confirm_quotes(run: services.JobRun, memory: MemorySettings) -> None:
    """The posted turn is what save_memory's quotes saved in the hour before it are checked
    against, with extraction's own check (job_begin read them: no statement when there are
    none): found in the traveller's messages, a quote becomes their words
    (fact_quotes_confirm). Only when the turn's transcript is here (learning on); never fails
    the job: an unchecked quote stays the assistant's."""
    if not run.agent_quotes:
        return
    job = run.job
    sources = user_texts(job.transcript)
    write_filter = MemoryWriteFilter(memory.blocked_patterns or [])
    found = {
        key: quote
        for key, quote in run.agent_quotes
        if clean_evidence(quote, write_filter=write_filter, sources=sources) == quote
    }
    if not found:
        return
    try:
        fact_services.fact_quotes_confirm(
            subject_id=job.subject_id,
            quotes=found,
            session_tag=job.session_tag,
            actor=Actor.extraction(f"extraction job {job.pk}"),
            reason=f"the assistant's quote was found in turn {job.turn_id}",
        )
    except DatabaseError as exc:
        logger.warning("extraction job %s: quotes not checked: %s", job.pk, type(exc).__name__)


def _store(job: ExtractionJob, proposal: Proposal, generation: int) -> ExtractionJob | None:
    """Write the batch once, together with the job's end, unless a clear or pause got there
    first. The statement that ends the job checks the generation again after fact_upsert has
    locked the subject row, so a clear committed at any moment before our commit is seen and
    the whole write rolls back; a pause is refused by fact_upsert itself (FactLearningPaused),
    under the same lock. The same statement refuses a job another delivery already finished
    (it waits for that delivery's commit on the job row), so facts are written once."""
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
    ended: list[ExtractionJob] = []

    def end_job(result: fact_services.UpsertResult) -> None:
        ended.append(
            services.job_succeed(
                job,
                purge_generation=generation,
                stored=len(result.created),
                updated=len(result.updated),
                sent_to_review=len(result.sent_to_review),
                **{**outcome, "duplicates": proposal.duplicates + len(result.unchanged)},
            )
        )

    # Outside any transaction (a worker), fact_upsert opens its own and the job's end travels
    # with the writes and the COMMIT: two round trips in all. Inside a caller's (a test), a
    # savepoint keeps a refusal from spoiling it.
    try:
        with transaction.atomic() if connection.in_atomic_block else nullcontext():
            try:
                fact_services.fact_upsert(
                    subject_id=job.subject_id,
                    facts=[
                        fact_services.FactDraft(
                            fact.key, fact.value, fact.category, evidence=fact.evidence
                        )
                        for fact in proposal.kept
                    ],
                    actor=Actor.extraction(f"extraction job {job.pk}"),
                    session_tag=job.session_tag,
                    reason=f"learned from turn {job.turn_id}",
                    # Any error of the write ends this transaction (re-raised below): no
                    # savepoint needed, two round trips fewer a turn.
                    savepoint=False,
                    before_commit=end_job,
                )
            except FactLearningPaused:
                raise _Discard(PAUSED_DURING_REASON) from None
            except FactMemoryDisabled:
                raise _Discard(DISABLED_DURING_REASON) from None
    except _Discard as discard:
        logger.info("extraction job %s: %s", job.pk, discard.reason)
        return services.job_finish(
            job.pk, status=JobStatus.SUCCEEDED, reason=discard.reason, **outcome
        )
    except Exception as exc:
        if not services.job_not_ended(exc):
            raise
        if job_selectors.job_is_finished(job.pk):
            return None  # another delivery of the same job finished it; our write rolled back
        logger.info("extraction job %s: %s", job.pk, DISCARDED_REASON)
        return services.job_finish(
            job.pk, status=JobStatus.SUCCEEDED, reason=DISCARDED_REASON, **outcome
        )
    finished = ended[0]
    logger.info(  # counts only, never values
        "extraction job %s succeeded: proposed=%d stored=%d updated=%d duplicates=%d "
        "blocked=%d invalid=%d to_review=%d",
        job.pk,
        finished.proposed,
        finished.stored,
        finished.updated,
        finished.duplicates,
        finished.blocked,
        finished.invalid,
        finished.sent_to_review,
    )
    return finished
