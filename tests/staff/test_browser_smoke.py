"""The smallest real flow in Chromium: a viewer logs in through the form, sees the dashboard."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from memoryadmin.staff.roles import VIEWER
from tests.factories import FactFactory, UserFactory
from tests.support.browser import assert_no_serious_axe_violations, click, staff_login

pytestmark = pytest.mark.browser


def test_a_viewer_logs_in_and_sees_the_dashboard(page, live_server):
    viewer = UserFactory(username="vera")
    viewer.groups.add(Group.objects.get_or_create(name=VIEWER)[0])
    FactFactory(subject_id="T-SMOKE-1", key="seat", value="Prefers aisle seats")

    staff_login(page, live_server, viewer, "correct-horse-battery")

    assert page.get_by_role("heading", level=1).inner_text() == "Overview"
    click(page.get_by_role("link", name="Travellers", exact=True))
    expect(page.get_by_text("T-SMOKE-1")).to_be_visible()
    expect(page.get_by_text("vera").first).to_be_visible()
    assert_no_serious_axe_violations(page)
