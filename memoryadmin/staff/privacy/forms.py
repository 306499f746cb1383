"""Forms of the privacy request pages and the webhook recipients. Shape only; the services in
memoryadmin.privacy decide, and their field messages are put back on these forms."""

from __future__ import annotations

from django import forms

from memoryadmin.privacy.models import (
    AgentRelation,
    Channel,
    IdentityCheck,
    RequestKind,
    RequestStatus,
    WebhookEventType,
)
from memoryadmin.privacy.recipients import ALL_EVENTS

NO_FACTS = "Recorded in the request's timeline. Don't copy the traveller's facts here."
DATE = forms.DateInput(attrs={"type": "date"})


def _blank(choices) -> list[tuple[str, str]]:
    return [("", "Any"), *choices]


class FilterForm(forms.Form):
    kind = forms.ChoiceField(choices=_blank(RequestKind.choices), required=False)
    status = forms.ChoiceField(choices=_blank(RequestStatus.choices), required=False)
    channel = forms.ChoiceField(choices=_blank(Channel.choices), required=False)
    subject_id = forms.CharField(max_length=128, required=False, label="Traveller id")


class RecordForm(forms.Form):
    subject_id = forms.CharField(max_length=128, label="Traveller id")
    kind = forms.ChoiceField(choices=RequestKind.choices, label="What they asked for")
    channel = forms.ChoiceField(
        choices=[c for c in Channel.choices if c[0] != Channel.PORTAL], label="How it arrived"
    )
    received_on = forms.DateField(
        widget=DATE,
        label="Received on",
        help_text="The day it reached the airline (the one-month clock starts here).",
    )
    note = forms.CharField(
        max_length=1000,
        required=False,
        label="Note",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=NO_FACTS,
    )
    identity_check = forms.ChoiceField(
        choices=[("", "Choose…"), *IdentityCheck.choices],
        label="How the traveller's identity was verified",
        help_text="“Not yet verified” records the request; it cannot be worked or completed "
        "until someone records the check.",
    )
    identity_checked = forms.CharField(
        max_length=500,
        required=False,
        label="What was checked",
        help_text="Required when checked by phone or in person, e.g. booking reference and "
        "date of birth. Don't copy the values here.",
    )
    agent_name = forms.CharField(
        max_length=200,
        required=False,
        label="Made on the traveller's behalf by",
        help_text="Leave these three fields empty when the traveller asked themselves.",
    )
    agent_relation = forms.ChoiceField(
        choices=[("", "—"), *AgentRelation.choices], required=False, label="Their relation"
    )
    agent_authority = forms.CharField(
        max_length=500,
        required=False,
        label="Evidence of their authority seen",
        help_text="E.g. a signed letter of authority, a power of attorney.",
    )

    AGENT_FIELDS = ("agent_name", "agent_relation", "agent_authority")


class IdentityForm(forms.Form):
    identity_check = forms.ChoiceField(
        choices=[
            ("", "Choose…"),
            *[c for c in IdentityCheck.choices if c[0] != IdentityCheck.UNVERIFIED],
        ],
        label="How the traveller's identity was verified",
    )
    identity_checked = forms.CharField(
        max_length=500,
        required=False,
        label="What was checked",
        help_text="Required when checked by phone or in person. Don't copy the values here.",
    )


class CompleteForm(forms.Form):
    note = forms.CharField(
        max_length=500, required=False, label="What was done", help_text=NO_FACTS
    )


class RefuseForm(forms.Form):
    ground = forms.CharField(
        max_length=500,
        required=False,
        label="Legal ground",
        help_text="Told to the traveller, e.g. 'Art. 12(5): manifestly unfounded or excessive'.",
    )


class ExtendForm(forms.Form):
    months = forms.TypedChoiceField(
        choices=[(1, "One month"), (2, "Two months")], coerce=int, label="Extend by"
    )
    reason = forms.CharField(
        max_length=500,
        required=False,
        label="Reason",
        help_text="The complexity or number of requests (Art. 12(3)).",
    )
    told_on = forms.DateField(widget=DATE, required=False, label="Traveller told on")


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=500, required=False, label="Reason", help_text=NO_FACTS)


class CsvForm(forms.Form):
    start = forms.DateField(widget=DATE, label="Received from")
    end = forms.DateField(widget=DATE, label="Received until")

    def clean(self) -> dict:
        data = super().clean()
        if data.get("start") and data.get("end") and data["start"] > data["end"]:
            self.add_error("end", "The end must be on or after the start.")
        return data


class RecipientForm(forms.Form):
    name = forms.CharField(max_length=100, label="System name")
    traveller_name_en = forms.CharField(
        max_length=100,
        required=False,
        label="Name travellers read (English)",
        help_text="On a traveller's receipt, e.g. “Our frequent flyer programme”. "
        "Never an internal system's name.",
    )
    traveller_name_zh_hant = forms.CharField(
        max_length=100,
        required=False,
        label="Name travellers read (Traditional Chinese)",
        help_text="For example “我們的會員計畫”.",
    )
    url = forms.CharField(max_length=500, label="HTTPS address")
    events = forms.MultipleChoiceField(
        choices=[(value, f"{value}: {label}") for value, label in WebhookEventType.choices],
        initial=list(ALL_EVENTS),
        widget=forms.CheckboxSelectMultiple,
        label="Events",
    )
    reason = forms.CharField(
        max_length=500,
        label="Reason for this change",
        help_text="Recorded in the policy history with your name.",
    )
