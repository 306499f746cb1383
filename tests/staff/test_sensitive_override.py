"""A retention rule that would undo the sensitive-facts rule says so on the preview and needs a
tick to save (issue 23)."""

from __future__ import annotations

import pytest

from memoryadmin.facts.models import RetentionRule

from .test_settings_views import BASE, rule_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def sensitive_rule():
    return RetentionRule.objects.create(name="Sensitive facts", sensitive=True, ttl_days=180)


def test_a_category_rule_longer_than_the_sensitive_rule_warns_and_asks(
    admin_client, sensitive_rule
):
    long_context = rule_form(name="Context a year", ttl_days="365")

    preview = admin_client.post(BASE + "retention/add/", {**long_context, "action": "preview"})

    body = preview.content.decode()
    assert preview.status_code == 200
    assert "This keeps sensitive facts longer than the sensitive-facts rule" in body
    assert "Sensitive context facts: kept 365 days" in body or "Sensitive context facts" in body
    assert 'name="keep_sensitive_longer"' in body

    unticked = admin_client.post(BASE + "retention/add/", {**long_context, "action": "confirm"})
    assert unticked.status_code == 400
    assert "Tick the box to keep sensitive facts longer" in unticked.content.decode()
    assert not RetentionRule.objects.filter(name="Context a year").exists()

    ticked = admin_client.post(
        BASE + "retention/add/",
        {**long_context, "action": "confirm", "keep_sensitive_longer": "yes"},
    )
    assert ticked.status_code == 302
    assert RetentionRule.objects.filter(name="Context a year", ttl_days=365).exists()


def test_a_shorter_category_rule_needs_no_tick(admin_client, sensitive_rule):
    short = rule_form(name="Context 90 days", ttl_days="90")
    preview = admin_client.post(BASE + "retention/add/", {**short, "action": "preview"})
    assert "longer than the sensitive-facts rule" not in preview.content.decode()
    saved = admin_client.post(BASE + "retention/add/", {**short, "action": "confirm"})
    assert saved.status_code == 302
