from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "memoryadmin.api"
    label = "api"
