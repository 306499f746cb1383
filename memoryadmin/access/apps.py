from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "memoryadmin.access"
    label = "access"
    verbose_name = "Staff access record"

    def ready(self) -> None:
        from memoryadmin import db

        from . import writer
        from .models import TABLE
        from .services import access_retention_cutoff
        from .sql import SQL_SWEEP_MODE

        writer.connect()
        # Partitioned by month: a month goes whole once all of it is past the
        # retention; its strays leave the default partition as the sweep's rows do.
        db.partitioned_register(
            db.Partitioned(
                table=TABLE,
                column="at",
                cutoff=access_retention_cutoff,
                before_move=SQL_SWEEP_MODE,
            )
        )
