from django.apps import AppConfig


class FactsConfig(AppConfig):
    name = "memoryadmin.facts"
    label = "facts"
