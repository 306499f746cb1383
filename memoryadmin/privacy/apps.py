from django.apps import AppConfig


def _requests_due_reading() -> list[tuple[tuple[str, ...], int]]:
    """The `memoryadmin_privacy_requests_due` gauge, by state (one query)."""
    from .selectors import privacy_requests_due_counts

    counts = privacy_requests_due_counts()
    return [(("due_7d",), counts["due_7d"]), (("overdue",), counts["overdue"])]


class PrivacyConfig(AppConfig):
    name = "memoryadmin.privacy"
    label = "privacy"

    def ready(self) -> None:
        from memoryadmin import db
        from memoryadmin.facts.corrections import (
            register_correction_listener,
            register_restriction_listener,
        )
        from memoryadmin.facts.erasure import register_eraser
        from memoryadmin.observability.gauges import register_gauge_source

        from . import outbox, restriction
        from .retention import log_retention_cutoff
        from .sql import ATTEMPTS_KEPT_PAST_MONTH
        from .tasks import outbox_dispatch_task

        register_gauge_source("memoryadmin_privacy_requests_due", _requests_due_reading)
        # The delivery log is partitioned by month: a month past the log's
        # retention is dropped, keeping the attempts of deliveries still kept.
        db.partitioned_register(
            db.Partitioned(
                table="privacy_webhook_attempt",
                column="attempted_at",
                cutoff=log_retention_cutoff,
                keep=(ATTEMPTS_KEPT_PAST_MONTH,),
            )
        )

        outbox.outbox_dispatcher_set(outbox_dispatch_task.delay)

        # Every erasure path writes its events in its own statement (the store's native path
        # too): the SQL parts. After commit, the dispatcher runs.
        register_eraser(
            "privacy.outbox.facts",
            sql=outbox.OUTBOX_FACTS_SQL,
            on_subject=False,
            after_commit=outbox.outbox_dispatch_soon,
        )
        register_eraser(
            "privacy.outbox.subject",
            sql=outbox.OUTBOX_SUBJECT_SQL,
            on_facts=False,
            after_commit=outbox.outbox_dispatch_soon,
        )
        # Every correction by a person (staff's edit form, the traveller's portal) writes its
        # `memory.fact.corrected` event in the correcting transaction.
        register_correction_listener("privacy.outbox.corrected", outbox.outbox_fact_corrected)
        # Stopping or resuming the use of one fact (Art. 18): its `memory.restricted` or
        # `memory.unrestricted` event (Art. 19), and a resumption completes its request.
        register_restriction_listener("privacy.outbox.restriction", outbox.outbox_fact_restriction)
        register_restriction_listener(
            "privacy.restriction.resolved", restriction.restriction_resolved
        )
