"""The privacy admins' settings pages through Django's test client: who gets in, what each form
refuses and records, the preview-confirm flow, tokens shown once, and constant queries."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group

from memoryadmin.api.models import ServiceToken
from memoryadmin.api.tokens import token_authenticate
from memoryadmin.conf.env import RATE_FORMS
from memoryadmin.facts.models import (
    EventAction,
    FactEvent,
    MemorySettings,
    PolicyAction,
    PolicyEvent,
    RetentionRule,
    RetentionRun,
    RunStatus,
    Subject,
)
from memoryadmin.staff.management.commands.seed_demo import DEMO_RETENTION_RULES
from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN, VIEWER
from memoryadmin.staff.settings.forms import RetentionRuleForm
from tests.factories import FactFactory, UserFactory
from tests.support.dbscan import occurrences

pytestmark = pytest.mark.django_db
BASE = "/staff/settings/"
PAGES = [
    "",
    "retention/",
    "retention/add/",
    "tokens/",
    "history/",
]


def user_with(role: str | None, username: str):
    user = UserFactory(username=username)
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def admin_client(client):
    client.force_login(user_with(PRIVACY_ADMIN, "pat.privacy"))
    return client


def settings_form(**changes):
    data = {
        "memory_enabled": "on",
        "tier_one_cap": "8",
        "max_new_facts": "3",
        "memory_model": "claude-haiku-4-5-20251001",
        "blocked_patterns": "",
        "audit_retention_days": "365",
        "reason": "DPIA-12",
    }
    data.update(changes)
    return {name: value for name, value in data.items() if value is not None}


# --- who gets in --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", PAGES)
@pytest.mark.parametrize("role", [None, VIEWER, EDITOR])
def test_only_privacy_admins_get_settings_pages(client, path, role):
    if role is None:
        response = client.get(BASE + path)
        assert response.status_code == 302 and response["Location"].startswith("/login/")
        return
    client.force_login(user_with(role, f"user-{role}"))
    assert client.get(BASE + path).status_code == 403
    assert client.post(BASE + path, {"reason": "x"}).status_code == 403


@pytest.mark.parametrize("path", PAGES)
def test_a_privacy_admin_gets_every_page(admin_client, path):
    assert admin_client.get(BASE + path).status_code == 200


def test_forms_need_a_csrf_token():
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user_with(PRIVACY_ADMIN, "csrf-admin"))
    assert client.post(BASE, settings_form()).status_code == 403
    assert MemorySettings.objects.filter(tier_one_cap=8).count() <= 1


# --- memory settings ----------------------------------------------------------------------------


def test_a_settings_change_is_saved_with_before_and_after(admin_client):
    response = admin_client.post(
        BASE, settings_form(tier_one_cap="5", blocked_patterns="loyalty\\s*\\d{6}")
    )
    assert response.status_code == 302
    row = MemorySettings.objects.get(pk=1)
    assert row.tier_one_cap == 5 and row.blocked_patterns == ["loyalty\\s*\\d{6}"]
    event = PolicyEvent.objects.get()
    assert event.action == PolicyAction.SETTINGS_CHANGED
    assert event.before == {"blocked_patterns": [], "tier_one_cap": 8}
    assert event.after == {"blocked_patterns": ["loyalty\\s*\\d{6}"], "tier_one_cap": 5}
    assert event.actor_user.username == "pat.privacy" and event.reason == "DPIA-12"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"blocked_patterns": "ok\n(unclosed"}, "Pattern 2: Not a valid regular expression"),
        ({"reason": ""}, "This field is required"),
        ({"tier_one_cap": "500"}, "less than or equal to 50"),
        ({"memory_model": "<b>model</b>"}, "Enter a model name"),
    ],
)
def test_a_bad_settings_change_is_refused_with_a_message_and_changes_nothing(
    admin_client, changes, message
):
    response = admin_client.post(BASE, settings_form(**changes))
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not PolicyEvent.objects.exists()
    assert MemorySettings.objects.filter(tier_one_cap=500).count() == 0


def test_the_try_box_says_blocked_or_allowed_and_stores_nothing(admin_client):
    admin_client.post(BASE, settings_form(blocked_patterns="frequent\\s+flyer\\s+\\w+"))
    blocked = admin_client.post(BASE + "try/", {"sample": "My frequent flyer ZZQ7781"})
    assert "Blocked." in blocked.content.decode()
    assert "ZZQ7781" in blocked.content.decode()  # only echoed back in the field it came from
    allowed = admin_client.post(BASE + "try/", {"sample": "Prefers aisle seats QQX"})
    assert "Allowed." in allowed.content.decode()
    assert occurrences("ZZQ7781") == {} and occurrences("aisle seats QQX") == {}


def test_the_try_box_says_so_when_a_stored_pattern_is_unusable(admin_client):
    MemorySettings.objects.filter(pk=1).update(blocked_patterns=["(broken"])  # not via the form
    from memoryadmin.facts.selectors import memory_config_invalidate

    memory_config_invalidate()
    response = admin_client.post(BASE + "try/", {"sample": "anything"})
    assert response.status_code == 400
    assert "invalid blocked pattern" in response.content.decode()


# --- retention rules ----------------------------------------------------------------------------


def rule_form(**changes):
    data = {
        "name": "Context 30 days",
        "category": "context",
        "key_glob": "",
        "sensitive": "any",
        "keep": "days",
        "ttl_days": "30",
        "reason": "policy v2",
    }
    data.update(changes)
    return data


def test_a_rule_is_previewed_then_saved_only_on_confirm(
    admin_client, django_capture_on_commit_callbacks
):
    FactFactory(subject_id="T-1", key="travel_party", value="With spouse", category="context")
    preview = admin_client.post(BASE + "retention/add/", rule_form(action="preview"))
    body = preview.content.decode()
    assert preview.status_code == 200 and "Check before you save" in body
    assert 'data-preview="shorten">1<' in body
    assert not RetentionRule.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        confirm = admin_client.post(BASE + "retention/add/", rule_form(action="confirm"))
    assert confirm.status_code == 302
    rule = RetentionRule.objects.get()
    assert (rule.category, rule.ttl_days) == ("context", 30)
    run = RetentionRun.objects.get()
    assert run.status == RunStatus.DONE and run.done == run.total == 1
    listing = admin_client.get(BASE + "retention/").content.decode()
    assert "Finished: 1 of 1 facts checked" in listing
    progress = admin_client.get(BASE + f"retention/runs/{run.pk}/").json()
    assert progress == {
        "id": run.pk,
        "status": "done",
        "status_label": "Done",
        "done": 1,
        "total": 1,
        "finished": True,
    }


def test_a_tying_rule_is_refused_with_the_reason(admin_client):
    RetentionRule.objects.create(name="Context", category="context", ttl_days=90)
    response = admin_client.post(BASE + "retention/add/", rule_form(action="preview"))
    assert response.status_code == 400
    assert "would tie with “Context”" in response.content.decode()
    confirm = admin_client.post(BASE + "retention/add/", rule_form(action="confirm"))
    assert confirm.status_code == 400 and RetentionRule.objects.count() == 1


def test_a_bad_key_pattern_or_missing_days_is_refused(admin_client):
    response = admin_client.post(
        BASE + "retention/add/", rule_form(key_glob="meal[", action="preview")
    )
    assert response.status_code == 400 and "* for any run" in response.content.decode()
    response = admin_client.post(BASE + "retention/add/", rule_form(ttl_days="", action="preview"))
    assert response.status_code == 400 and "Enter a number of days" in response.content.decode()


def test_editing_and_deleting_a_rule_are_audited(admin_client):
    rule = RetentionRule.objects.create(name="Everything", ttl_days=365)
    response = admin_client.post(
        BASE + f"retention/{rule.pk}/",
        rule_form(name="Everything", category="", keep="forever", ttl_days="", action="confirm"),
    )
    assert response.status_code == 302
    rule.refresh_from_db()
    assert rule.ttl_days is None
    page = admin_client.get(BASE + f"retention/{rule.pk}/delete/")
    assert "Delete the rule “Everything”?" in page.content.decode()
    delete = BASE + f"retention/{rule.pk}/delete/"
    assert admin_client.post(delete, {"reason": ""}).status_code == 400
    assert admin_client.post(delete, {"reason": "gone"}).status_code == 302
    assert not RetentionRule.objects.exists()
    actions = list(PolicyEvent.objects.order_by("id").values_list("action", flat=True))
    assert actions == [PolicyAction.RULE_UPDATED, PolicyAction.RULE_DELETED]


def test_rule_names_are_escaped(admin_client):
    RetentionRule.objects.create(name="<script>alert(1)</script>", ttl_days=3)
    body = admin_client.get(BASE + "retention/").content.decode()
    assert "<script>alert(1)" not in body and "&lt;script&gt;alert(1)" in body


@pytest.mark.parametrize("rules", [2, 40])
def test_the_retention_page_uses_constant_queries(
    admin_client, rules, django_assert_max_num_queries
):
    for index in range(rules):
        RetentionRule.objects.create(name=f"r{index}", key_glob=f"k{index}_*", ttl_days=index + 1)
    RetentionRun.objects.create(total=10, done=5)
    with django_assert_max_num_queries(6):
        assert admin_client.get(BASE + "retention/").status_code == 200


# --- legal hold ---------------------------------------------------------------------------------


def test_a_legal_hold_is_placed_and_lifted_with_a_reason(admin_client):
    FactFactory(subject_id="T-hold", key="seat", value="Aisle")
    url = BASE + "legal-hold/T-hold/"
    assert "No legal hold" in admin_client.get(url).content.decode()
    assert admin_client.post(url, {"hold": "place", "reason": ""}).status_code == 400
    assert admin_client.post(url, {"hold": "place", "reason": "case 9"}).status_code == 302
    assert Subject.objects.get(subject_id="T-hold").legal_hold
    assert admin_client.post(url, {"hold": "lift", "reason": "closed"}).status_code == 302
    assert not Subject.objects.get(subject_id="T-hold").legal_hold
    assert list(
        FactEvent.objects.filter(subject_id="T-hold", key="").values_list("action", flat=True)
    ) == [EventAction.LEGAL_HOLD_PLACED, EventAction.LEGAL_HOLD_LIFTED]
    assert admin_client.get(BASE + "legal-hold/nobody/").status_code == 404


# --- service tokens -----------------------------------------------------------------------------


def test_a_token_secret_is_shown_once_and_works(admin_client):
    response = admin_client.post(
        BASE + "tokens/",
        {"name": "booking-agent", "scopes": ["memory:read", "turns:write"], "reason": "new host"},
    )
    # Shown in the answer to the POST itself: never stored, not even in django_session.
    assert response.status_code == 201
    shown = response
    body = shown.content.decode()
    secret = re.search(r'id="secret" readonly value="([^"]+)"', body).group(1)
    assert secret.startswith("mat_") and token_authenticate(secret) is not None
    assert shown["Cache-Control"] == "no-store"
    assert occurrences(secret) == {}  # pg_dump: not in any table
    # django_session's rows are signed and encoded: a secret kept there would not show in the
    # dump, so read them decoded.
    from django.contrib.sessions.models import Session

    sessions = [str(session.get_decoded()) for session in Session.objects.all()]
    assert sessions and not any(secret in session for session in sessions)
    token = ServiceToken.objects.get()
    again = admin_client.get(BASE + f"tokens/{token.pk}/created/").content.decode()
    assert secret not in again and "cannot be shown again" in again
    assert token.scopes == ["memory:read", "turns:write"]
    event = PolicyEvent.objects.get()
    assert event.action == PolicyAction.TOKEN_ISSUED and secret not in str(event.after)
    assert occurrences(secret) == {}

    revoke = admin_client.post(BASE + f"tokens/{token.pk}/revoke/", {"reason": "host retired"})
    assert revoke.status_code == 302 and token_authenticate(secret) is None
    assert PolicyEvent.objects.filter(action=PolicyAction.TOKEN_REVOKED).count() == 1
    listing = admin_client.get(BASE + "tokens/").content.decode()
    assert "Revoked" in listing and "booking-agent" in listing


def test_a_token_rate_is_checked_by_the_settings_grammar_on_its_field(admin_client):
    form = {"name": "booking-agent", "scopes": ["memory:read"], "reason": "new host"}

    refused = admin_client.post(BASE + "tokens/", {**form, "throttle_rate": "600/mango"})

    assert refused.status_code == 400
    assert refused.context["form"].errors["throttle_rate"] == [
        f"Write it as requests per period: {RATE_FORMS}; e.g. 600/min."
    ]
    assert not ServiceToken.objects.exists()

    created = admin_client.post(BASE + "tokens/", {**form, "throttle_rate": "1200/minute"})

    assert created.status_code == 201
    assert ServiceToken.objects.get().throttle_rate == "1200/minute"


def test_a_token_needs_a_scope_and_a_name(admin_client):
    response = admin_client.post(BASE + "tokens/", {"name": "", "reason": "x"})
    assert response.status_code == 400
    assert not ServiceToken.objects.exists()


def test_the_policy_history_lists_changes(admin_client):
    admin_client.post(BASE, settings_form(max_new_facts="2"))
    body = admin_client.get(BASE + "history/").content.decode()
    assert "Memory settings changed" in body and "DPIA-12" in body and "pat.privacy" in body


def test_the_policy_history_marks_which_field_changed(admin_client):
    admin_client.post(BASE, settings_form(max_new_facts="2"))
    body = admin_client.get(BASE + "history/").content.decode()
    changed = re.findall(r'<dt class="changed">([^<]+) <strong class="changed-mark">', body)
    assert changed == ["new facts per turn", "new facts per turn"]  # in before and in after


def test_only_the_fields_that_differ_are_marked():
    from types import SimpleNamespace

    from memoryadmin.staff.templatetags.policy_format import policy_changed

    rule = {"name": "Context", "category": "context", "ttl_days": 365, "key_glob": ""}
    edited = SimpleNamespace(before=rule, after={**rule, "ttl_days": 180})
    assert policy_changed(edited) == {"ttl_days"}
    assert policy_changed(SimpleNamespace(before=None, after=rule)) == set()  # a new rule


def test_a_pattern_re2_cannot_run_is_refused_by_the_form(admin_client):
    response = admin_client.post(BASE, settings_form(blocked_patterns="ok\n(gold)\\s+\\1"))
    assert response.status_code == 400
    assert "Pattern 2: Uses a feature the filter cannot run in safe time" in (
        response.content.decode()
    )
    assert MemorySettings.objects.get(pk=1).blocked_patterns == []


@pytest.mark.django_db(transaction=True)  # the calls run in a child process of their own
def test_a_catastrophic_pattern_cannot_hang_the_try_box_or_an_agent_write(admin_client):
    """`(a+)+$` used to hold a gunicorn worker until WORKER TIMEOUT on "aaaa...a!". Each call
    runs in a forked child that is killed at the deadline (tests/support/deadline.py): a
    backtracking match holds the GIL, so a thread could not be given up on."""
    from django.db import connections
    from rest_framework.test import APIClient

    from memoryadmin.api.tokens import token_issue
    from tests.support.deadline import TIMED_OUT, run_within

    admin_client.post(BASE, settings_form(blocked_patterns="(a+)+$"))
    assert MemorySettings.objects.get(pk=1).blocked_patterns == ["(a+)+$"]
    _, secret = token_issue(name="re2-host", scopes=["memory:write"])
    hostile = "a" * 190 + "!"

    def try_it() -> int:
        return admin_client.post(BASE + "try/", {"sample": hostile}).status_code

    def agent_write() -> int:
        agent = APIClient(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return agent.put(
            "/api/v1/subjects/re2-1/facts",
            {"facts": [{"key": "x", "value": hostile}]},
            format="json",
        ).status_code

    answers = {}
    for name, work in (("try", try_it), ("put", agent_write)):
        connections.close_all()  # the child opens its own; it must not share this process's
        answers[name] = run_within(10, work)
        assert answers[name] is not TIMED_OUT, f"{name}: still matching after 10 s"
    assert answers == {"try": 200, "put": 200}


def _demo_rules(**context_changes):
    rules = []
    for name, defaults in DEMO_RETENTION_RULES:
        if name == "Context facts":
            defaults = {**defaults, **context_changes}
        rules.append(RetentionRule.objects.create(name=name, **defaults))
    return rules


def _resave(admin_client, rule, action):
    form = RetentionRuleForm.initial_from(rule)
    return admin_client.post(
        BASE + f"retention/{rule.pk}/",
        {**form, "ttl_days": form["ttl_days"] or "", "reason": "check", "action": action},
    )


def test_the_demo_rules_do_not_trip_the_sensitive_rule_warning(admin_client):
    """Saving any of `make run`'s rules as it is shows no "keeps sensitive facts longer"
    warning and needs no tick: a sensitive context fact is kept 180 days, as promised."""
    for rule in _demo_rules():
        preview = _resave(admin_client, rule, "preview")
        assert preview.status_code == 200 and "Check before you save" in preview.content.decode()
        assert 'id="sensitive-override"' not in preview.content.decode(), rule.name
        assert _resave(admin_client, rule, "confirm").status_code == 302, rule.name


def test_a_context_rule_for_every_fact_does_trip_it(admin_client):
    """The warning still fires where a rule really keeps sensitive facts longer: a context rule
    for sensitive facts too outranks the 180-day sensitive rule with its 365 days."""
    context = next(r for r in _demo_rules(sensitive=None) if r.name == "Context facts")
    preview = _resave(admin_client, context, "preview").content.decode()
    assert 'id="sensitive-override"' in preview
    assert "Sensitive context facts" in preview
    assert _resave(admin_client, context, "confirm").status_code == 400
