"""Placeholder until the agent API lands (issue 3)."""

urlpatterns: list = []
