"""The agent API under /api/v1/.

Order matters: `facts/search` comes before `facts/{key}`, and the catch-all comes last so an
unknown address under /api/v1/ answers a JSON 404. The turns routes are included here, before the
catch-all, so it does not hide them (memoryadmin/urls.py includes them too; the first match wins).
"""

from csp.decorators import csp_update
from django.urls import include, path, re_path, register_converter

from . import views
from .converters import FactKeyConverter, SubjectIdConverter
from .errors import api_not_found
from .portal_links import PortalLinkView
from .schema import RedocView, SchemaView, SwaggerView
from .usage import UsageView

register_converter(SubjectIdConverter, "subject_id")
register_converter(FactKeyConverter, "fact_key")

SUBJECT = "subjects/<subject_id:subject_id>/"

urlpatterns = [
    path("schema/", SchemaView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's setup as a script file, so the page needs no inline
    # script under our Content-Security-Policy.
    path("docs/", SwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    # Redoc styles itself with <style> elements it creates at run time: this one page allows
    # inline styles (never inline scripts).
    path(
        "redoc/",
        csp_update({"style-src": ["'unsafe-inline'"]})(RedocView.as_view(url_name="api-schema")),
        name="api-redoc",
    ),
    path("memory", views.MemoryStatusView.as_view(), name="api-memory-status"),
    path(SUBJECT + "facts", views.FactsView.as_view(), name="api-facts"),
    path(SUBJECT + "facts/search", views.FactSearchView.as_view(), name="api-facts-search"),
    path(SUBJECT + "facts/<fact_key:key>", views.FactDetailView.as_view(), name="api-fact"),
    path(SUBJECT + "tier-one", views.TierOneView.as_view(), name="api-tier-one"),
    path(SUBJECT + "clear", views.ClearView.as_view(), name="api-clear"),
    path(
        SUBJECT + "purge-generation",
        views.PurgeGenerationView.as_view(),
        name="api-purge-generation",
    ),
    path(SUBJECT + "portal-links", PortalLinkView.as_view(), name="api-portal-links"),
    path(SUBJECT + "usage", UsageView.as_view(), name="api-usage"),
    path("", include("memoryadmin.api.turns")),
    re_path(r"", api_not_found, name="api-not-found"),
]
