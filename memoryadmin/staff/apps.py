from django.apps import AppConfig


class StaffConfig(AppConfig):
    name = "memoryadmin.staff"
    label = "staff"
