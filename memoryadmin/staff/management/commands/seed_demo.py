"""Demo data for `make run`: travellers with realistic facts and history, and one staff user per
role. Idempotent: travellers already present are left alone, users keep their passwords.

The portal's demo travellers, FF-100231 (`make run` prints a link for them) and FF-100232 (the
same in Traditional Chinese: `manage.py portal_link FF-100232`), show every
differentiator on the first visit: facts learned with their own words and one saved by the
assistant, use receipts from several conversations, an earlier "forget everything" with its
receipt and the erasure request it closed (acknowledged by a webhook recipient, named for
travellers in both languages), a download and a correction as requests, and staff looks."""

from __future__ import annotations

import hashlib
import logging

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice

from memoryadmin.access import writer as access_writer
from memoryadmin.access.choices import AccessKind
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import RetentionRule, Subject
from memoryadmin.facts.services import FactDraft
from memoryadmin.privacy import flows as privacy_flows
from memoryadmin.privacy import outbox, webhooks
from memoryadmin.privacy.export import traveller_export_bytes
from memoryadmin.privacy.models import WebhookRecipient
from memoryadmin.privacy.recipients import webhook_recipient_add
from memoryadmin.quality.models import QualitySample
from memoryadmin.quality.services import quality_mark_record, quality_sample_draw
from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN, ROLES, VIEWER
from memoryadmin.usage.services import TurnUse, uses_record

# The rules `make run` starts with. The context rule is for facts that are not sensitive: a
# category outranks sensitivity, so a context rule for every fact would keep sensitive context
# facts 365 days, past the sensitive-facts rule's 180 (and the rule form would rightly say so).
DEMO_RETENTION_RULES: tuple[tuple[str, dict[str, object]], ...] = (
    ("Default", {"ttl_days": 730}),
    ("Context facts", {"category": "context", "sensitive": False, "ttl_days": 365}),
    ("Sensitive facts", {"sensitive": True, "ttl_days": 180}),
)

DEMO_USERS = (
    ("viewer", "viewer-demo-2026", VIEWER),
    ("editor", "editor-demo-2026", EDITOR),
    ("privacy", "privacy-demo-2026", PRIVACY_ADMIN),
)
ROLE_WORDS = {VIEWER: "viewer", EDITOR: "editor", PRIVACY_ADMIN: "privacy admin"}

# The demo privacy admin's authenticator key: fixed and public (RFC 6238's test key), so the
# demo works without a phone (`manage.py demo_totp_code`, or any TOTP app given the base32 form
# GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ). Demo data only: real accounts use `manage.py staff_totp`.
DEMO_TOTP_KEY = "3132333435363738393031323334353637383930"

P, C, X = "preference", "constraint", "context"

# The portal's demo travellers, in English and in Traditional Chinese: (what an earlier "forget
# everything" erased, the home airport as they corrected it in the portal).
PORTAL_DEMO = {
    "FF-100231": ("Likes a quiet corner in the lounge", "Flies out of Songshan (TSA) when it can"),
    "FF-100232": ("喜歡在貴賓室安靜的角落休息", "盡量從松山機場出發"),
}
# The traveller's own words behind what was learned from their chats (shown as "You said ...").
QUOTES = {
    ("FF-100231", "seat_preference"): "On long flights I always take the aisle, I get up a lot",
    ("FF-100231", "overnight_flight"): "Please, no more red-eyes. I can't sleep on planes",
    ("FF-100232", "seat_preference"): "長途的話我一定要坐走道，比較方便起來走動",
    ("FF-100232", "overnight_flight"): "紅眼班機我真的不行，在飛機上睡不著",
    ("FF-100239", "meal_preference"): "我吃素，飛機餐請幫我訂素食",
}
# Saved by the assistant itself (save_memory), not learned from the traveller's words.
SAVED_BY_ASSISTANT = {("FF-100231", "travel_party"), ("FF-100232", "travel_party")}
# The webhook recipient of the demo: its internal name for staff, its names for travellers.
DEMO_RECIPIENT = {
    "name": "Loyalty CRM",
    "url": "https://crm.airline.example/hooks/memory",
    "traveller_name_en": "Our frequent flyer programme",
    "traveller_name_zh_hant": "我們的會員計畫",
}
# (subject, [(key, value, category)], learned by) — "agent" facts go through sensitivity review.
TRAVELLERS: list[tuple[str, list[tuple[str, str, str]], str]] = [
    (
        "FF-100231",
        [
            ("seat_preference", "Prefers aisle seats on long-haul flights", P),
            ("overnight_flight", "Avoids overnight flights", C),
            ("travel_party", "Usually travels with spouse", X),
            ("home_airport", "Flies out of Taoyuan (TPE)", X),
        ],
        "extraction",
    ),
    (
        "FF-100232",
        [
            ("seat_preference", "長途航班偏好靠走道座位", P),
            ("overnight_flight", "不搭紅眼班機", C),
            ("travel_party", "通常和先生一起旅行", X),
            ("home_airport", "從桃園機場出發", X),
        ],
        "extraction",
    ),
    (
        "FF-100233",
        [
            ("meal_preference", "Vegetarian meals", P),
            ("home_airport", "Flies out of Taoyuan (TPE)", X),
            ("connection_limit", "At most one connection", C),
        ],
        "agent",
    ),
    (
        "FF-100234",
        [
            ("mobility_assistance", "Needs a wheelchair from check-in to the gate", C),
            ("seat_preference", "Prefers seats near the front", P),
        ],
        "agent",
    ),
    (
        "FF-100235",
        [("mobility_assistance", "我需要輪椅協助登機", C), ("home_airport", "常從松山機場出發", X)],
        "agent",
    ),
    (
        "FF-100236",
        [
            ("health_note", "Diabetic, carries insulin in cabin baggage", X),
            ("meal_preference", "Low-sugar meals when available", P),
        ],
        "agent",
    ),
    (
        "FF-100237",
        [
            ("cabin_preference", "Books premium economy on flights over 8 hours", P),
            ("baggage_habit", "Always checks one bag, golf clubs in summer", X),
        ],
        "extraction",
    ),
    (
        "FF-100238",
        [
            ("frequent_route", "Often flies Taipei to Tokyo Haneda", X),
            ("seat_preference", "Prefers window seats", P),
        ],
        "extraction",
    ),
    (
        "FF-100239",
        [
            ("meal_preference", "偏好素食餐點", P),
            ("frequent_route", "常飛台北往返香港", X),
            ("connection_limit", "轉機時間至少兩小時", C),
        ],
        "extraction",
    ),
    (
        "FF-100240",
        [
            ("travel_party", "Travels with two children under 10", X),
            ("seat_preference", "Wants the family seated together", C),
        ],
        "extraction",
    ),
    (
        "FF-100241",
        [("meal_preference", "Halal meals", P), ("seat_preference", "Prefers aisle seats", P)],
        "agent",
    ),
    ("FF-100242", [("pregnancy", "懷孕中，希望靠近洗手間的座位", C)], "agent"),
    (
        "FF-100243",
        [
            ("overnight_flight", "Will take red-eyes only on routes under 5 hours", C),
            ("home_airport", "Based in Kaohsiung (KHH)", X),
        ],
        "extraction",
    ),
    (
        "FF-100244",
        [
            ("baggage_habit", "Travels with carry-on only", P),
            ("cabin_preference", "Business class for work trips", P),
            ("frequent_route", "Monthly Taipei–Singapore trips for work", X),
        ],
        "extraction",
    ),
    (
        "FF-100245",
        [
            ("seat_preference", "偏好緊急出口排座位，腿比較長", P),
            ("meal_preference", "不吃牛肉", P),
        ],
        "extraction",
    ),
    (
        "FF-100246",
        [
            ("travel_party", "Flies with an elderly mother twice a year", X),
            ("connection_limit", "Avoids connections in Hong Kong", C),
        ],
        "extraction",
    ),
    (
        "FF-100247",
        [
            ("pet_travel", "Travels with a small dog in the cabin", X),
            ("seat_preference", "Prefers window seats", P),
        ],
        "extraction",
    ),
    ("FF-100248", [("hearing", "Hard of hearing; prefers written gate announcements", C)], "agent"),
    (
        "FF-100249",
        [
            ("home_airport", "Lives near Taichung; prefers TPE over KHH", X),
            ("overnight_flight", "偏好白天的航班", P),
        ],
        "extraction",
    ),
    (
        "FF-100250",
        [
            ("seat_preference", "Prefers bulkhead seats", P),
            ("meal_preference", "Asian vegetarian meal", P),
            ("travel_party", "Usually travels alone", X),
        ],
        "extraction",
    ),
]


class Command(BaseCommand):
    help = "Load demo travellers, facts, history and staff users (safe to run again)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--base-url",
            default="http://127.0.0.1:8000",
            help="Where the demo is served, for the addresses it prints (make run passes its own).",
        )

    def handle(self, *args, **options) -> None:
        # Demo tasks run eagerly in this process: their one-line "succeeded" records are noise here.
        logging.getLogger("celery.app.trace").setLevel(logging.WARNING)
        base_url = options["base_url"].rstrip("/")
        with transaction.atomic():
            users = self._users()
            self._retention_rules()
            created = self._travellers(users)
            self._quality_sample(users)
        self.stdout.write(self.style.SUCCESS(f"Demo data ready: {created} new travellers."))
        self.stdout.write(f"Log in at {base_url}/login/ as:")
        for username, password, role in DEMO_USERS:
            self.stdout.write(f"  {ROLE_WORDS[role]:<14} {username} / {password}")
        self.stdout.write(
            "  The privacy admin also enters an authenticator code: get the current one with\n"
            "    make demo-code\n"
            "  (or add the key GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ to any TOTP app)."
        )
        self.stdout.write(f"Agent API docs: {base_url}/api/v1/docs/")

    def _users(self) -> dict[str, object]:
        groups = {role: Group.objects.get_or_create(name=role)[0] for role in ROLES}
        users = {}
        for username, password, role in DEMO_USERS:
            user, made = get_user_model().objects.get_or_create(
                username=username, defaults={"is_staff": role == PRIVACY_ADMIN}
            )
            if made:
                user.set_password(password)
                user.save()
            user.groups.add(groups[role])
            if role == PRIVACY_ADMIN:
                TOTPDevice.objects.get_or_create(
                    user=user,
                    defaults={
                        "name": "demo authenticator",
                        "key": DEMO_TOTP_KEY,
                        "confirmed": True,
                    },
                )
            users[role] = user
        return users

    def _travellers(self, users: dict[str, object]) -> int:
        existing = set(Subject.objects.values_list("subject_id", flat=True))
        created = 0
        editor = Actor.staff(users[EDITOR])
        for index, (subject_id, facts, learned_by) in enumerate(TRAVELLERS):
            if subject_id in existing:
                continue
            created += 1
            actor = (
                Actor.extraction("demo-turn")
                if learned_by == "extraction"
                else Actor.agent("demo-agent-host")
            )
            tag = f"{index:012x}"
            if subject_id in PORTAL_DEMO:
                self._forgot_before(subject_id, actor, tag)
            key, value, category = facts[0]
            if key == "seat_preference" and "window" not in value.lower():
                # Some history: an older value that a later turn replaced.
                services.fact_upsert(
                    subject_id=subject_id,
                    facts=[FactDraft(key, "Prefers window seats", category)],
                    actor=actor,
                    reason="learned from an earlier turn",
                    session_tag=tag,
                )
            learned = [
                FactDraft(key, value, category, evidence=QUOTES.get((subject_id, key), ""))
                for key, value, category in facts
                if (subject_id, key) not in SAVED_BY_ASSISTANT
            ]
            services.fact_upsert(
                subject_id=subject_id,
                facts=learned,
                actor=actor,
                reason="learned from turn 1",
                session_tag=tag,
            )
            saved = [
                FactDraft(key, value, category)
                for key, value, category in facts
                if (subject_id, key) in SAVED_BY_ASSISTANT
            ]
            if saved:
                services.fact_upsert(
                    subject_id=subject_id,
                    facts=saved,
                    actor=Actor.agent("demo-agent-host"),
                    reason="saved by the assistant in turn 2",
                    session_tag=tag,
                )
            if subject_id in PORTAL_DEMO:
                self._used(subject_id, [key for key, _value, _category in facts])
                self._requests_and_looks(subject_id, users)
            if subject_id == "FF-100234":
                services.fact_approve(
                    subject_id=subject_id,
                    key="mobility_assistance",
                    actor=editor,
                    reason="traveller confirmed on the phone",
                )
            if subject_id == "FF-100238":
                services.fact_edit(
                    subject_id=subject_id,
                    key="frequent_route",
                    value="Often flies Taipei Songshan to Tokyo Haneda",
                    expected_version=1,
                    actor=editor,
                    reason="corrected the departure airport",
                )
            if subject_id == "FF-100247":
                services.subject_set_preferences(
                    subject_id=subject_id,
                    memory_paused=True,
                    actor=Actor.customer(subject_id),
                    reason="paused learning in the privacy portal",
                )
        return created

    def _quality_sample(self, users: dict[str, object]) -> None:
        """A sample with most facts marked, so "Memory quality" shows figures: the editor marks
        the facts that are not sensitive, two of them wrong, and leaves the rest to review."""
        if QualitySample.objects.exists():
            return
        editor = Actor.staff(users[EDITOR])
        sample = quality_sample_draw(actor=Actor.system("demo"), size=16, seed=33)
        wrong = iter((("wrong", "one_off"), ("wrong", "inference")))
        for n, item in enumerate(sample.items.select_related("fact").order_by("id")):
            if item.fact is None or item.fact.sensitive or n % 5 == 4:
                continue  # masked until revealed, or left for the visitor to mark
            mark, reason = next(wrong, ("correct", "")) if n % 4 == 1 else ("correct", "")
            quality_mark_record(actor=editor, item=item, mark=mark, reason=reason)

    def _recipient(self) -> WebhookRecipient:
        """The demo's webhook recipient: a system told about every erasure."""
        found = WebhookRecipient.objects.filter(name=DEMO_RECIPIENT["name"]).first()
        if found is not None:
            return found
        recipient, _secret = webhook_recipient_add(
            events=None, actor=Actor.system("seed_demo"), reason="demo data", **DEMO_RECIPIENT
        )
        return recipient

    def _forgot_before(self, subject_id: str, actor: Actor, tag: str) -> None:
        """An earlier "forget everything" in the portal: an erasure request closed with its
        receipt, checked afterwards, and the demo recipient's acknowledgement on record (the
        demo has no CRM to call, so its answer is recorded as a 204 here)."""
        services.fact_upsert(
            subject_id=subject_id,
            facts=[FactDraft("lounge_habit", PORTAL_DEMO[subject_id][0], "preference")],
            actor=actor,
            reason="learned from an earlier turn",
            session_tag=tag,
        )
        self._recipient()
        traveller = Actor.customer(subject_id)
        outcome = privacy_flows.privacy_forget(
            subject_id=subject_id,
            actor=traveller,
            reason="the traveller chose 'forget everything' in the privacy portal",
        )
        privacy_flows.privacy_verify_erasure(request_id=outcome.request.pk, actor=traveller)
        for delivery_id in outbox.outbox_dispatch():
            webhooks.delivery_record_attempt(
                delivery_id=delivery_id,
                outcome=webhooks.Outcome(True, 204, 38),
                attempted_at=timezone.now(),
            )

    def _used(self, subject_id: str, keys: list[str]) -> None:
        """Use receipts: the agent had these facts in turns of four conversations."""
        uses_record(
            subject_id=subject_id,
            uses=[
                TurnUse(
                    f"demo-session-{n // 2}",
                    f"demo-turn-{n}",
                    injected=keys[:2] if n % 3 else keys[:1],
                    recalled=[] if n % 3 else keys[1:],
                )
                for n in range(8)
            ],
        )

    def _requests_and_looks(self, subject_id: str, users: dict[str, object]) -> None:
        """A download and a correction, each a request closed with its evidence; a support
        agent's and a privacy officer's looks at the traveller."""
        body = traveller_export_bytes(subject_id)
        privacy_flows.privacy_export_record(
            subject_id=subject_id,
            sha256=hashlib.sha256(body).hexdigest(),
            actor=Actor.customer(subject_id),
        )
        privacy_flows.privacy_correct(
            subject_id=subject_id,
            key="home_airport",
            value=PORTAL_DEMO[subject_id][1],
            expected_version=None,
            actor=Actor.customer(subject_id),
            reason="corrected by the traveller in the privacy portal",
        )
        for role, what in (
            (VIEWER, AccessKind.TRAVELLER),
            (VIEWER, AccessKind.FACT_HISTORY),
            (PRIVACY_ADMIN, AccessKind.PRIVACY_REQUEST),
        ):
            user = users[role]
            access_writer.record(
                staff_user_id=user.pk,
                staff_username=user.get_username(),
                what=what,
                subject_ids=[subject_id],
                address="127.0.0.1",
            )
        access_writer.flush()

    def _retention_rules(self) -> None:
        for name, defaults in DEMO_RETENTION_RULES:
            RetentionRule.objects.get_or_create(name=name, defaults=defaults)
