from django.urls import include, path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("staff/settings/", include("memoryadmin.staff.settings.urls")),
]
