"""Privacy requests for staff, mounted at /staff/privacy/ (namespace "privacy"); the webhook
recipients live with the privacy admins' settings, at /staff/settings/webhooks/."""

from django.urls import path

from . import views, webhook_views

app_name = "privacy"

REQUEST = "requests/<str:number>/"

urlpatterns = [
    path("", views.request_list, name="list"),
    path("record/", views.request_record, name="record"),
    path("requests.csv", views.requests_csv, name="csv"),
    path(REQUEST, views.request_detail, name="request"),
    path(REQUEST + "export/", views.request_export, name="export"),
    path(REQUEST + "complete/", views.request_complete, name="complete"),
    path(REQUEST + "erase/", views.request_erase, name="erase"),
    path(REQUEST + "refuse/", views.request_refuse, name="refuse"),
    path(REQUEST + "extend/", views.request_extend, name="extend"),
    path(REQUEST + "reopen/", views.request_reopen, name="reopen"),
    path(REQUEST + "identity/", views.request_identity, name="identity"),
    path(REQUEST + "split/", views.request_split, name="split"),
    path("webhooks/", webhook_views.recipients, name="webhooks"),
    path(
        "webhooks/<int:recipient_id>/created/",
        webhook_views.recipient_created,
        name="webhook_created",
    ),
    path("webhooks/deliveries/<int:delivery_id>/", webhook_views.delivery, name="delivery"),
]
