from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import post_delete, post_migrate, post_save


def _config_changed(**_: object) -> None:
    from .selectors import memory_config_invalidate

    memory_config_invalidate()


def _install_functions(using: str = "default", **_: object) -> None:
    """After every `migrate`: the server-side function of the store's delete, for the erasers
    registered now (every app is ready), and none of an earlier release's (`db.functions`)."""
    from .erasure import install_functions

    if connections[using].vendor != "postgresql":
        return
    with connections[using].cursor() as cursor:
        install_functions(cursor)


class FactsConfig(AppConfig):
    name = "memoryadmin.facts"
    label = "facts"

    def ready(self) -> None:
        # Make the Celery app current in every Django process, so shared_task binds to it.
        from memoryadmin import db
        from memoryadmin.celery import app  # noqa: F401

        from . import gauges, sql, tables
        from .models import MemorySettings, RetentionRule
        from .services.policy import recompute_starter_set
        from .services.retention import events_retention_cutoff
        from .tasks import recompute_expiry

        recompute_starter_set(recompute_expiry.delay)
        gauges.register()  # facts by category/status and the sweep's lag, for /metrics
        # The history, partitioned by month: kept up and dropped by month on beat.
        db.partitioned_register(
            db.Partitioned(
                table=tables.FACT_EVENT,
                column="created_at",
                storage=tables.FACT_EVENT_STORAGE,
                cutoff=events_retention_cutoff,
                # The audit sweep keeps the same rows (sql.EVENTS_KEPT_PAST_RETENTION).
                keep=(sql.EVENTS_OF_HELD_TRAVELLERS, sql.EVENTS_OF_LIVE_FACTS_PER_ROW),
                closed_index=sql.EVENTS_OF_LIVE_FACTS_INDEX,
            )
        )

        post_migrate.connect(_install_functions, sender=self, dispatch_uid="facts-functions")

        # The services that change settings and rules call memory_config_invalidate(); this
        # safety net covers any other save (the admin, the shell, a fixture) so that the
        # per-process cache is never wrong for longer than MEMORY_CONFIG_CACHE_SECONDS.
        for model in (MemorySettings, RetentionRule):
            post_save.connect(_config_changed, sender=model, dispatch_uid=f"cfg-save-{model}")
            post_delete.connect(_config_changed, sender=model, dispatch_uid=f"cfg-del-{model}")
