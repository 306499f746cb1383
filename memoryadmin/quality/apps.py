from django.apps import AppConfig


class QualityConfig(AppConfig):
    name = "memoryadmin.quality"
    label = "quality"
    verbose_name = "Memory quality"

    def ready(self) -> None:
        from memoryadmin.facts.erasure import register_eraser

        from . import gauges
        from .sql import QUALITY_ERASE_FACTS_SQL, QUALITY_ERASE_SUBJECTS_SQL

        # A sampled fact that goes leaves its item anonymous (mark and dimensions only), in the
        # erasing statement itself; all of a traveller's on "forget everything".
        register_eraser("quality.facts", sql=QUALITY_ERASE_FACTS_SQL, on_subject=False)
        register_eraser("quality.subjects", sql=QUALITY_ERASE_SUBJECTS_SQL, on_facts=False)
        gauges.register()
