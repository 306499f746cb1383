"""Every staff and portal page answers: one GET each, as the role that may open it, with a
landmark of the page in the answer."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.test import Client
from django.utils import timezone

from memoryadmin.api.tokens import token_issue
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.validation import session_tag
from memoryadmin.portal.services import portal_link_issue
from memoryadmin.privacy.services import privacy_request_record
from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN, VIEWER
from memoryadmin.usage.services import TurnUse, uses_record
from tests.staff.conftest import make_staff
from tests.support.package import members

pytestmark = [pytest.mark.django_db]

T = "FF-PAGES-0001"
FACT = f"/staff/travellers/{T}/facts"


@pytest.fixture
def held() -> dict[str, object]:
    """A traveller with a plain, a sensitive and a held fact; a rule, its run and a token."""
    services.fact_upsert(
        subject_id=T,
        facts=[
            services.FactDraft("seat_preference", "Prefers an aisle seat"),
            services.FactDraft("travel_party", "Travels with a spouse", "context"),
        ],
        actor=Actor.system("test"),
    )
    services.fact_flag_sensitive(subject_id=T, key="travel_party", actor=Actor.system("test"))
    services.fact_upsert(
        subject_id=T,
        facts=[services.FactDraft("mobility", "Uses a cane", "context")],
        actor=Actor.agent("host-1"),
    )
    rule, run = services.retention_rule_save(
        proposal=services.RuleProposal(
            name="Context", category="context", key_glob="", sensitive=None, ttl_days=30
        ),
        actor=Actor.system("test"),
        reason="a rule to show",
    )
    token, _ = token_issue(name="every-page", scopes=["memory:read"])
    request = privacy_request_record(
        subject_id=T,
        kind="access",
        channel="phone",
        received_at=timezone.now(),
        actor=Actor.system("test"),
    )
    uses_record(subject_id=T, uses=[TurnUse("sess-e", "turn-e", injected=["seat_preference"])])
    return {"rule": rule.pk, "run": run.pk, "token": token.pk, "request": request.number}


def staff_pages(ids: dict[str, object]) -> dict[str, list[tuple[str, str]]]:
    """(address, landmark) per role: each role's own pages, not those of the roles below it."""
    return {
        VIEWER: [
            ("/staff/", "<h1>Overview</h1>"),
            ("/staff/travellers/", "<h1>Travellers</h1>"),
            (f"/staff/travellers/{T}/", f"Traveller <code>{T}</code>"),
            (f"/staff/travellers/{T}/timeline/", f"Timeline of <code>{T}</code>"),
            (f"{FACT}/seat_preference/", "Prefers an aisle seat"),
            ("/staff/review/", "Review queue"),
            ("/staff/privacy/", "<h1>Privacy requests</h1>"),
            (f"/staff/privacy/requests/{ids['request']}/", f"request {ids['request']}"),
            ("/staff/unused/", "<h1>Facts not used in 90 days</h1>"),
            (
                f"/staff/travellers/{T}/turns/{session_tag('sess-e')}/turn-e/",
                "Prefers an aisle seat",
            ),
        ],
        EDITOR: [
            (f"/staff/travellers/{T}/add-fact/", f"Add a fact about <code>{T}</code>"),
            (
                f"{FACT}/seat_preference/edit/",
                'Edit Seat preference <code class="fact-key">seat_preference</code>',
            ),
            (f"{FACT}/seat_preference/expiry/", "Set the expiry of"),
            (f"{FACT}/travel_party/reveal/", "Reveal the sensitive value"),
            (f"{FACT}/seat_preference/delete/", "Delete for good"),
            (
                f"{FACT}/seat_preference/expire/",
                'Expire Seat preference <code class="fact-key">seat_preference</code>?',
            ),
            (f"{FACT}/seat_preference/flag/", "Flag as sensitive"),
            ("/staff/privacy/record/", "<h1>Record a request</h1>"),
            ("/staff/quality/", "<h1>Memory quality</h1>"),
            ("/staff/quality/sample/", "<h1>Quality sample</h1>"),
        ],
        PRIVACY_ADMIN: [
            ("/staff/settings/", "Memory settings"),
            ("/staff/settings/retention/", "Retention rules"),
            ("/staff/settings/retention/add/", "Add a retention rule"),
            (f"/staff/settings/retention/{ids['rule']}/", "Edit the rule “Context”"),
            (f"/staff/settings/retention/{ids['rule']}/delete/", "Delete the rule “Context”?"),
            (f"/staff/settings/retention/runs/{ids['run']}/", '"done": '),
            (f"/staff/settings/legal-hold/{T}/", f"Legal hold for <code>{T}</code>"),
            ("/staff/settings/tokens/", "Service tokens"),
            (f"/staff/settings/tokens/{ids['token']}/created/", "Token “every-page”"),
            (f"/staff/settings/tokens/{ids['token']}/revoke/", "Revoke “every-page”?"),
            ("/staff/settings/history/", "Policy history"),
            ("/staff/access/", "<h1>Access record</h1>"),
            (f"/staff/access/?traveller={T}", f'value="{T}"'),
            ("/staff/privacy/webhooks/", "<h1>Webhook recipients</h1>"),
            (f"/staff/privacy/requests/{ids['request']}/refuse/", "Refuse the request"),
        ],
    }


@pytest.mark.parametrize("role", [VIEWER, EDITOR, PRIVACY_ADMIN])
def test_each_staff_page_answers_its_role(held: dict[str, object], role: str) -> None:
    client = Client()
    client.force_login(make_staff(f"pages-{role}", role))
    for path, landmark in staff_pages(held)[role]:
        response = client.get(path)
        body = response.content.decode()
        assert response.status_code == 200, path
        assert landmark in body, path


def test_each_portal_page_answers_the_traveller(held: dict[str, object]) -> None:
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    link = portal_link_issue(subject_id=T, issued_by="test")
    assert client.post(f"/portal/open/{quote(link.secret)}").status_code == 302
    for path, landmark in [
        ("/portal/", "What our assistant remembers about you"),
        ("/portal/facts/seat_preference/change", "Change what the assistant remembers"),
        ("/portal/facts/seat_preference/delete", "Delete this?"),
        ("/portal/forget", "Forget everything?"),
        ("/portal/forget/confirm", "Are you sure?"),
        ("/portal/looked", "Who has looked at your memory"),
    ]:
        response = client.get(path)
        body = response.content.decode()
        assert response.status_code == 200, path
        assert landmark in body, path
    download = client.get("/portal/download")
    assert download.status_code == 200 and '"exported_at"' in members(download.content)[
        "memory.json"
    ].decode("utf-8")
    receipt = client.post("/portal/forget/confirm", {"confirm": "on"})
    assert receipt.status_code == 302
    response = client.get(receipt["Location"])
    assert response.status_code == 200
    assert "The assistant has forgotten everything" in response.content.decode()
