"""Evidence: the traveller's own words behind a fact. Kept only when it is a literal part of the
user's messages (after the same clean-up as values), at most 200 characters and allowed by the
write filter; a dropped quote never drops the fact. Replacing a fact replaces its quote."""

from __future__ import annotations

import pytest

from memoryadmin.extraction.runtime import review_proposals, user_texts
from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.services import FactDraft
from memoryadmin.usage.display import why_known

pytestmark = pytest.mark.django_db

MESSAGES = [
    {"role": "user", "text": "Book Lisbon in May.\n I always  want an aisle seat, thanks."},
    {"role": "assistant", "text": "You usually take the vegetarian meal, right?"},
    {"role": "user", "text": "Yes. Call me on +886 912 345 678 if the gate changes."},
]
FACT = {"key": "seat_preference", "value": "Prefers aisle seats", "category": "preference"}


def reviewed(evidence: object) -> tuple[int, str]:
    proposal = review_proposals(
        [{**FACT, "evidence": evidence}],
        held=[],
        max_new_facts=3,
        user_texts=user_texts(MESSAGES),
    )
    return len(proposal.kept), proposal.kept[0].evidence if proposal.kept else ""


def test_only_the_travellers_messages_are_sources() -> None:
    assert user_texts(MESSAGES) == [
        "Book Lisbon in May. I always want an aisle seat, thanks.",
        "Yes. Call me on +886 912 345 678 if the gate changes.",
    ]


@pytest.mark.parametrize(
    ("quote", "kept"),
    [
        ("I always want an aisle seat", "I always want an aisle seat"),  # whitespace as values
        ("  I always\twant an aisle seat ", "I always want an aisle seat"),
        ("I prefer aisle seats", ""),  # a paraphrase
        ("i always want an aisle seat", ""),  # not literal
        ("You usually take the vegetarian meal", ""),  # the assistant's words
        ("Call me on +886 912 345 678", ""),  # the traveller's, but a phone number
        ("aisle " * 40, ""),  # over 200 characters
        ("", ""),
        (42, ""),
        ("!!!", ""),
    ],
)
def test_a_quote_is_kept_only_when_verbatim_short_and_allowed(quote: object, kept: str) -> None:
    count, evidence = reviewed(quote)
    assert count == 1, "the fact is judged on its own"
    assert evidence == kept


def test_the_upsert_bounds_and_filters_a_quote_it_is_handed() -> None:
    """A caller's quote (save_memory's) cannot be checked against a turn here, but it is still
    bounded and filtered; a blocked quote drops the quote, never the fact."""
    services.fact_upsert(
        subject_id="ev-1",
        facts=[
            FactDraft("seat_preference", "Prefers aisle seats", evidence="aisle please"),
            FactDraft("home_airport", "Taipei", evidence="card 4111 1111 1111 1111"),
        ],
        actor=Actor.agent("host-1"),
    )
    held = {fact.key: fact for fact in selectors.subject_facts("ev-1")}
    assert held["seat_preference"].evidence == "aisle please"
    assert held["seat_preference"].evidence_origin == "agent"
    assert held["home_airport"].evidence == ""
    assert why_known(held["seat_preference"]).kind == "saved"


def test_a_replaced_fact_reads_the_new_quote_or_none_and_history_keeps_each() -> None:
    actor = Actor.extraction("job 1")
    services.fact_upsert(
        subject_id="ev-2",
        actor=actor,
        facts=[FactDraft("meal", "Vegetarian", evidence="just vegetarian for me")],
    )
    services.fact_upsert(subject_id="ev-2", actor=actor, facts=[FactDraft("meal", "Vegan")])
    fact = selectors.subject_fact("ev-2", "meal")
    assert fact.evidence == "" and why_known(fact).kind == "learned"
    events = list(selectors.fact_history("ev-2", "meal"))
    assert events[0].after["evidence"] == "just vegetarian for me"
    assert events[1].before["evidence"] == "just vegetarian for me"
    assert "evidence" not in events[1].after


@pytest.mark.parametrize(
    ("actor", "kind"),
    [(Actor.system("seed"), "learned"), (Actor.customer("ev-3"), "corrected")],
)
def test_a_correction_says_so_instead_of_quoting(actor: Actor, kind: str) -> None:
    services.fact_upsert(
        subject_id="ev-3",
        actor=Actor.extraction("job"),
        facts=[FactDraft("meal", "Vegetarian", evidence="vegetarian please")],
    )
    fact = selectors.subject_fact("ev-3", "meal")
    if kind == "corrected":
        fact = services.fact_edit(
            subject_id="ev-3",
            key="meal",
            expected_version=fact.version,
            actor=actor,
            value="Vegan",
            reason="the traveller corrected it",
        )
        assert fact.evidence == "" and fact.evidence_origin == "customer"
    assert why_known(fact).kind == ("corrected" if kind == "corrected" else "said")


def test_staff_and_imported_facts_say_who_wrote_them(editor) -> None:
    services.fact_upsert(
        subject_id="ev-4",
        actor=Actor.staff(editor),
        facts=[FactDraft("meal", "Vegetarian", evidence="as told")],
    )
    fact = selectors.subject_fact("ev-4", "meal")
    assert why_known(fact).kind == "staff"
