"""URLs of the support dashboard, mounted at /staff/.

The privacy admins' pages hang under /staff/settings/ from their own module with their own
namespace ("settings"), included from memoryadmin/urls.py; the navigation shows "Settings" to
privacy admins when `settings:memory` resolves.
"""

from django.urls import path, register_converter

from memoryadmin.api.converters import FactKeyConverter, SubjectIdConverter

from . import views

register_converter(SubjectIdConverter, "staff_subject")
register_converter(FactKeyConverter, "staff_key")

app_name = "staff"

FACT = "travellers/<staff_subject:subject_id>/facts/<staff_key:key>/"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("travellers/", views.travellers, name="travellers"),
    path("travellers/<staff_subject:subject_id>/", views.traveller, name="traveller"),
    path("travellers/<staff_subject:subject_id>/timeline/", views.timeline, name="timeline"),
    path("travellers/<staff_subject:subject_id>/add-fact/", views.fact_add, name="fact_add"),
    path("travellers/<staff_subject:subject_id>/bulk/", views.bulk, name="bulk"),
    path(FACT, views.fact_detail, name="fact"),
    path(FACT + "edit/", views.fact_edit, name="fact_edit"),
    path(FACT + "expiry/", views.fact_expiry, name="fact_expiry"),
    path(FACT + "reveal/", views.fact_reveal, name="fact_reveal"),
    path(FACT + "review/", views.review_decide, name="review_decide"),
    path(FACT + "<slug:action>/", views.fact_action, name="fact_action"),
    path("review/", views.review, name="review"),
]
