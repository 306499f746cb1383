"""Portal housekeeping: spent links and ended sessions go after a day; live ones stay."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memoryadmin.portal.models import PortalLink, PortalSession
from memoryadmin.portal.services import portal_link_issue
from memoryadmin.portal.tasks import purge_stale_portal_rows_task

from .conftest import A, open_url

pytestmark = pytest.mark.django_db


def test_stale_links_and_sessions_are_purged_and_live_ones_kept(signed_in, issue_link):
    live_client = signed_in(A)
    fresh = issue_link(A)
    old = portal_link_issue(subject_id=A, issued_by="t")
    PortalLink.objects.filter(pk=PortalLink.objects.latest("id").pk).update(
        expires_at=timezone.now() - timedelta(days=2)
    )
    ended = signed_in(A)
    ended.post("/portal/sign-out")
    PortalSession.objects.filter(ended_at__isnull=False).update(
        ended_at=timezone.now() - timedelta(days=2)
    )

    links, sessions = purge_stale_portal_rows_task()

    assert (links, sessions) == (1, 1)
    assert live_client.get("/portal/").status_code == 200
    assert Client().post(open_url(fresh)).status_code == 302
    assert Client().get(open_url(old.secret), follow=True).status_code == 404  # gone: invalid
