"""Forms for the settings pages. They check shape only; the services check meaning (ranges,
patterns, ties) and their ValidationErrors are put back on the form's fields."""

from __future__ import annotations

from typing import Any

from django import forms

from memoryadmin.api.models import Scope
from memoryadmin.facts.models import Category, MemorySettings
from memoryadmin.facts.services import RuleProposal

REASON_HELP = "Recorded in the policy history with your name, e.g. a ticket or DPIA reference."


def reason_field() -> forms.CharField:
    return forms.CharField(max_length=500, label="Reason for this change", help_text=REASON_HELP)


class MemorySettingsForm(forms.Form):
    memory_enabled = forms.BooleanField(
        required=False,
        label="Memory is on",
        help_text="Off: the agent is told memory is not enabled, tier one is empty and nothing "
        "is learned. Stored facts are kept.",
    )
    tier_one_cap = forms.IntegerField(
        min_value=0,
        max_value=50,
        label="Facts injected into every turn (tier one cap)",
        help_text="Travel rules (constraints) are always included, even beyond this number.",
    )
    max_new_facts = forms.IntegerField(
        min_value=0,
        max_value=20,
        label="New facts learned per conversation turn, at most",
    )
    memory_model = forms.CharField(max_length=100, label="Model used to extract facts")
    blocked_patterns = forms.CharField(
        required=False,
        label="Extra blocked patterns",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text="One regular expression per line, matched without regard to case. A fact "
        "whose key or value matches is refused. The built-in rules (card, account, "
        "ID and phone numbers, IBANs, e-mail addresses) always apply.",
    )
    audit_retention_days = forms.IntegerField(
        min_value=1,
        max_value=36500,
        label="Keep the audit history for (days)",
        help_text="Older history is deleted by the daily audit sweep.",
    )
    reason = reason_field()

    @classmethod
    def initial_from(cls, row: MemorySettings) -> dict[str, Any]:
        return {
            "memory_enabled": row.memory_enabled,
            "tier_one_cap": row.tier_one_cap,
            "max_new_facts": row.max_new_facts,
            "memory_model": row.memory_model,
            "blocked_patterns": "\n".join(row.blocked_patterns or []),
            "audit_retention_days": row.audit_retention_days,
        }

    def values(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        data.pop("reason")
        data["blocked_patterns"] = [
            line.strip() for line in data["blocked_patterns"].splitlines() if line.strip()
        ]
        return data


class UseRetentionForm(forms.Form):
    """How long use receipts are kept; its own form and policy event."""

    days = forms.IntegerField(
        min_value=1,
        max_value=3650,
        label="Keep use receipts for (days)",
        help_text="Which facts the agent had in which turn, shown on fact pages and to the "
        "traveller. Older receipts are deleted by the hourly sweep.",
    )
    reason = reason_field()


class TryPatternForm(forms.Form):
    sample = forms.CharField(
        max_length=500,
        label="Sample text",
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Checked against the saved patterns and the built-in rules. Not stored.",
    )


SENSITIVE_CHOICES = [
    ("any", "Sensitive or not"),
    ("yes", "Only sensitive facts"),
    ("no", "Only non-sensitive facts"),
]
KEEP_CHOICES = [("days", "Delete after a number of days"), ("forever", "Keep until deleted")]


class RetentionRuleForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        label="Name",
        help_text="Shown in the history as the actor that deleted a fact.",
    )
    category = forms.ChoiceField(
        required=False,
        label="Category",
        choices=[("", "Any category"), *Category.choices],
    )
    key_glob = forms.CharField(
        required=False,
        max_length=64,
        label="Key pattern (optional)",
        help_text="Letters, digits and _; * stands for any run of characters, ? for one. "
        "For example meal_* matches meal_preference and meal_time.",
    )
    sensitive = forms.ChoiceField(choices=SENSITIVE_CHOICES, initial="any", label="Sensitivity")
    keep = forms.ChoiceField(
        choices=KEEP_CHOICES, initial="days", widget=forms.RadioSelect, label="How long"
    )
    ttl_days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=36500,
        label="Days after the fact last changed",
        error_messages={
            "min_value": "Keep facts at least 1 day, or choose keep until deleted.",
            "max_value": "Keep facts at most 36,500 days, or choose keep until deleted.",
        },
    )
    reason = reason_field()

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if (
            data.get("keep") == "days"
            and not data.get("ttl_days")
            and "ttl_days" not in self.errors
        ):
            self.add_error("ttl_days", "Enter a number of days, or choose keep until deleted.")
        return data

    def proposal(self, pk: int | None) -> RuleProposal:
        data = self.cleaned_data
        return RuleProposal(
            pk=pk,
            name=data["name"],
            category=data["category"],
            key_glob=data["key_glob"],
            sensitive={"any": None, "yes": True, "no": False}[data["sensitive"]],
            ttl_days=data["ttl_days"] if data["keep"] == "days" else None,
        )

    @classmethod
    def initial_from(cls, rule: Any) -> dict[str, Any]:
        return {
            "name": rule.name,
            "category": rule.category,
            "key_glob": rule.key_glob,
            "sensitive": {None: "any", True: "yes", False: "no"}[rule.sensitive],
            "keep": "forever" if rule.ttl_days is None else "days",
            "ttl_days": rule.ttl_days,
        }


class ReasonForm(forms.Form):
    reason = reason_field()


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, label="Name", help_text="The agent host or system that will use it."
    )
    scopes = forms.MultipleChoiceField(
        choices=Scope.choices,
        widget=forms.CheckboxSelectMultiple,
        label="Scopes",
        help_text="Give each host only what it needs.",
    )
    # Checked by `token_issue` with the settings' rate grammar; its error lands on this field.
    throttle_rate = forms.CharField(
        required=False,
        max_length=32,
        label="Requests allowed (optional)",
        help_text="Per second, minute, hour or day, e.g. 1200/min or 20/s. Empty: the "
        "API_THROTTLE_RATE setting.",
    )
    reason = reason_field()


class LegalHoldForm(forms.Form):
    hold = forms.ChoiceField(
        choices=[("place", "Place a legal hold"), ("lift", "Lift the legal hold")],
        widget=forms.HiddenInput,
    )
    reason = reason_field()
