from django.urls import path, re_path

from . import access_views, request_views, restrict_views, views

app_name = "portal"

urlpatterns = [
    path("", views.home, name="home"),
    path("open/<path:secret>", views.open_link, name="open"),
    path("link/<str:reason>", views.link_refused, name="link-refused"),
    path("sign-out", views.sign_out, name="sign-out"),
    path("signed-out", views.signed_out_page, name="signed-out"),
    path("facts/<str:key>/change", views.fact_edit, name="fact-edit"),
    path("facts/<str:key>/delete", views.fact_delete, name="fact-delete"),
    path("facts/<str:key>/stop-using", restrict_views.fact_restrict, name="fact-restrict"),
    path("facts/<str:key>/use-again", restrict_views.fact_unrestrict, name="fact-unrestrict"),
    path("choices", views.choices, name="choices"),
    path("download", views.export, name="export"),
    path("your-data", request_views.export_page, name="export-page"),
    path("requests", request_views.requests_page, name="requests"),
    path("looked", access_views.looked, name="looked"),
    path("forget", views.forget, name="forget"),
    path("forget/confirm", views.forget_confirm, name="forget-confirm"),
    path("receipts/<str:number>", views.receipt, name="receipt"),
    path("language", views.set_language, name="language"),
    re_path(r"", views.not_found, name="not-found"),
]
