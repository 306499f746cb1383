from django.apps import AppConfig


class UsageConfig(AppConfig):
    name = "memoryadmin.usage"
    label = "usage"

    def ready(self) -> None:
        from memoryadmin import db
        from memoryadmin.extraction.services import job_uses_taker_set
        from memoryadmin.facts.erasure import register_eraser
        from memoryadmin.facts.store import use_recorder_set

        from .services import record_turn_bodies, uses_retention_cutoff, uses_take_from_jobs
        from .sql import (
            USAGE_ERASE_FACTS_SQL,
            USAGE_ERASE_SUBJECTS_SQL,
            USAGE_ERASE_WAITING_SQL,
            USES_KEPT_PAST_RETENTION,
        )
        from .tables import MEMORY_USE

        # Receipts are partitioned by month, dropped by month past their retention.
        db.partitioned_register(
            db.Partitioned(
                table=MEMORY_USE,
                column="used_at",
                cutoff=uses_retention_cutoff,
                keep=(USES_KEPT_PAST_RETENTION,),  # as the row sweep, SQL_SWEEP_USES
            )
        )

        # A fact's receipts go with it, in the erasing statement itself (so the store's native
        # async delete keeps working); all of a traveller's go on "forget everything".
        register_eraser("usage.facts", sql=USAGE_ERASE_FACTS_SQL)
        register_eraser("usage.subjects", sql=USAGE_ERASE_SUBJECTS_SQL, on_facts=False)
        # Receipts waiting on posted turns' jobs name keys: they go when one of the facts does.
        register_eraser("usage.waiting", sql=USAGE_ERASE_WAITING_SQL, on_subject=False)
        use_recorder_set(record_turn_bodies)  # DjangoMemoryStore.record_uses
        # The receipts a posted turn carried, recorded by its extraction task.
        job_uses_taker_set(lambda job_id: uses_take_from_jobs(job_id=job_id))
