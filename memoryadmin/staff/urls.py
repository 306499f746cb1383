"""URLs of the support dashboard, mounted at /staff/.

The privacy admins' pages hang under /staff/settings/ from their own module with their own
namespace ("settings"), included from memoryadmin/urls.py; the navigation shows "Settings" to
privacy admins when `settings:memory` resolves.
"""

from django.urls import path, register_converter

from memoryadmin.api.converters import FactKeyConverter, SubjectIdConverter

from .views import (
    access_record,
    actions,
    edits,
    history,
    overview,
    quality,
    redaction,
    restriction,
    review,
    travellers,
    turns,
)

register_converter(SubjectIdConverter, "staff_subject")
register_converter(FactKeyConverter, "staff_key")

app_name = "staff"

FACT = "travellers/<staff_subject:subject_id>/facts/<staff_key:key>/"

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("travellers/", travellers.travellers, name="travellers"),
    path("unused/", overview.unused, name="unused"),
    path("travellers/<staff_subject:subject_id>/", travellers.traveller, name="traveller"),
    path("travellers/<staff_subject:subject_id>/timeline/", history.timeline, name="timeline"),
    path("travellers/<staff_subject:subject_id>/add-fact/", edits.fact_add, name="fact_add"),
    path("travellers/<staff_subject:subject_id>/bulk/", edits.bulk, name="bulk"),
    path(FACT, history.fact_detail, name="fact"),
    path(
        "travellers/<staff_subject:subject_id>/deleted/<str:digest>/",
        history.deleted_fact,
        name="deleted_fact",
    ),
    path(FACT + "edit/", edits.fact_edit, name="fact_edit"),
    path(FACT + "expiry/", edits.fact_expiry, name="fact_expiry"),
    path(FACT + "reveal/", actions.fact_reveal, name="fact_reveal"),
    path(FACT + "review/", review.review_decide, name="review_decide"),
    path(
        FACT + "versions/<int:version>/redact/",
        redaction.version_redact,
        name="version_redact",
    ),
    path(FACT + "stop-using/", restriction.fact_restrict, name="fact_restrict"),
    path(FACT + "confirm/", restriction.fact_confirm, name="fact_confirm"),
    path(FACT + "<slug:action>/", actions.fact_action, name="fact_action"),
    path("review/", review.review, name="review"),
    path("access/", access_record.access_record, name="access_record"),
    path("quality/", quality.quality, name="quality"),
    path("quality/sample/", quality.quality_sample, name="quality_sample"),
    path("quality/sample/draw/", quality.quality_draw, name="quality_draw"),
    path("quality/sample/<int:item_id>/mark/", quality.quality_mark, name="quality_mark"),
    path(
        "travellers/<staff_subject:subject_id>/as-of/",
        travellers.traveller_as_of,
        name="as_of",
    ),
    path(
        "travellers/<staff_subject:subject_id>/turns/<slug:session_tag>/<path:turn_id>/",
        turns.turn,
        name="turn",
    ),
]
