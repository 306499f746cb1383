from django.urls import path

from . import views

app_name = "settings"
urlpatterns = [
    path("", views.memory_settings, name="memory"),
    path("try/", views.try_pattern, name="try"),
    path("use-retention/", views.use_retention, name="use_retention"),
    path("retention/", views.retention_rules, name="retention"),
    path("retention/add/", views.retention_rule_edit, name="rule_add"),
    path("retention/<int:rule_id>/", views.retention_rule_edit, name="rule_edit"),
    path("retention/<int:rule_id>/delete/", views.retention_rule_delete, name="rule_delete"),
    path("retention/runs/<int:run_id>/", views.retention_run, name="run"),
    path("legal-hold/<str:subject_id>/", views.legal_hold, name="legal_hold"),
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<int:token_id>/created/", views.token_created, name="token_created"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke_view, name="token_revoke"),
    path("history/", views.history, name="history"),
]
