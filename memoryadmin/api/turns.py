"""Placeholder until the turns endpoints land (issue 4)."""

urlpatterns: list = []
