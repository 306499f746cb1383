from django.apps import AppConfig


class ExtractionConfig(AppConfig):
    name = "memoryadmin.extraction"
    label = "extraction"

    def ready(self) -> None:
        from memoryadmin.facts.erasure import register_eraser

        from . import metrics
        from .services import EXTRACTION_ERASE_SQL, job_sender_set
        from .tasks import extract_turn_task

        job_sender_set(lambda job_id: extract_turn_task.delay(job_id))

        register_eraser("extraction.transcripts", sql=EXTRACTION_ERASE_SQL, on_facts=False)
        metrics.register()  # the queue's age, for /metrics
