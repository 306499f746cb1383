"""What the demo holds: its staff users, retention rules, webhook recipient and travellers with
their facts, in their own words where they said them. `story` says when each thing happened."""

from __future__ import annotations

from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN, VIEWER

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
# The language each portal traveller reads the portal (and their download) in.
PORTAL_LANGUAGE = {"FF-100231": "en", "FF-100232": "zh-hant"}
# What the portal travellers' first chat taught, before a later one changed it, and their words
# then: both name a colleague, a third party's name that should never have been kept, so a privacy
# admin later redacts that version (`story.redacted_version`).
WINDOW_SEAT = {
    "FF-100231": "Window seat next to my colleague Jonas",
    "FF-100232": "靠窗座位，要坐在同事志明旁邊",
}
WINDOW_QUOTE = {
    "FF-100231": "Put me by the window, next to my colleague Jonas Quill",
    "FF-100232": "幫我劃靠窗的位子，坐在我同事林志明旁邊",
}
# The fact each portal traveller stops the use of while it is checked, and what they wrote in
# the portal's box (`story.restricted_fact`): the assistant saved it, and it is only half right.
RESTRICTED = {
    "FF-100231": ("travel_party", "Only on holidays. For work I travel on my own."),
    "FF-100232": ("travel_party", "只有度假才會一起，出差都是我自己一個人。"),
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
# The webhook recipient of the demo: its internal name for staff, its names for travellers (its
# address is the demo's own receiver, `receiver.py`).
DEMO_RECIPIENT = {
    "name": "Loyalty CRM",
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
