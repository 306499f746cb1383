from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("api/v1/", include("memoryadmin.api.urls")),
    path("api/v1/", include("memoryadmin.api.turns")),
    path("healthz", include("memoryadmin.api.health")),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("memoryadmin.staff.urls")),
]
