"""Forms for the dashboard. Every change asks for a reason; every fact form carries the version
it was loaded at, so a save over someone else's change is refused instead of overwriting it."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import AuthenticationForm

from memoryadmin.facts.models import ActorKind, Category, EventAction
from memoryadmin.facts.validation import REASON_MAX_LENGTH
from memoryadmin.quality.choices import WrongReason
from memoryadmin_client.types import KEY_MAX_LENGTH, VALUE_MAX_LENGTH


def reason_field(label: str = "Reason") -> forms.CharField:
    return forms.CharField(
        label=label,
        max_length=REASON_MAX_LENGTH,
        help_text="Kept in the history with your name.",
        error_messages={"required": "Give a reason: it is kept in the history."},
    )


class SearchForm(forms.Form):
    q = forms.CharField(
        label="Traveller id, words in a fact, or a receipt number",
        max_length=128,
        required=False,
        strip=True,
        widget=forms.TextInput(attrs={"autofocus": True, "type": "search"}),
    )


class ReasonForm(forms.Form):
    """Confirm an action on one fact: expire, flag, unflag, approve, reject, delete, reveal."""

    reason = reason_field()
    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1, required=False)


class FactEditForm(forms.Form):
    value = forms.CharField(
        label="Value",
        max_length=VALUE_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2, "autofocus": True}),
    )
    category = forms.ChoiceField(label="Category", choices=Category.choices)
    reason = reason_field()
    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)


class FactAddForm(forms.Form):
    key = forms.CharField(
        label="Key",
        max_length=KEY_MAX_LENGTH,
        help_text="A short topic in snake_case, e.g. seat_preference.",
    )
    value = forms.CharField(
        label="Value", max_length=VALUE_MAX_LENGTH, widget=forms.Textarea(attrs={"rows": 2})
    )
    category = forms.ChoiceField(label="Category", choices=Category.choices)
    reason = reason_field()
    confirm_sensitive = forms.BooleanField(
        label="Add it as a sensitive fact", required=False, widget=forms.HiddenInput
    )


class ExpiryForm(forms.Form):
    expires_on = forms.DateField(
        label="Expires on",
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="The agent stops seeing the fact at the start of this day. Leave empty "
        "to let the retention rules decide.",
    )
    reason = reason_field()
    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1, required=False)


class ReviewForm(forms.Form):
    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])
    reason = reason_field()
    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)


BULK_CHOICES = [
    ("expire", "Expire now"),
    ("flag_sensitive", "Flag sensitive"),
    ("delete", "Delete"),
]


class BulkForm(forms.Form):
    keys = forms.MultipleChoiceField(
        label="Facts",
        widget=forms.CheckboxSelectMultiple,
        error_messages={
            "required": "Select at least one fact.",
            "invalid_choice": "A selected fact no longer exists; reload the page.",
        },
    )
    action = forms.ChoiceField(label="With the selected facts", choices=BULK_CHOICES)
    reason = reason_field()
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, keys: list[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["keys"].choices = [(key, key) for key in keys]


class EventFilterForm(forms.Form):
    action = forms.ChoiceField(
        label="Action", required=False, choices=[("", "Any action"), *EventAction.choices]
    )
    actor = forms.ChoiceField(
        label="Actor", required=False, choices=[("", "Anyone"), *ActorKind.choices]
    )


class StaffLoginForm(AuthenticationForm):
    """Django's sign-in form with its username length enforced: Django only copies the length
    into the widget, so a 10,000-character username reached the lock-out library, which writes
    it into a 255-character column (a 500). Refused here, before anyone authenticates."""

    def clean_username(self) -> str:
        username = self.cleaned_data.get("username") or ""
        limit = self.fields["username"].max_length or 150
        if len(username) > limit:
            raise forms.ValidationError(
                f"Ensure this value has at most {limit} characters (it has {len(username)}).",
                code="max_length",
            )
        return username


class QualityMarkForm(forms.Form):
    """One sampled fact's mark: correct, or wrong with one reason (quality.services)."""

    mark = forms.ChoiceField(choices=[("correct", "Correct"), ("wrong", "Wrong")])
    reason = forms.ChoiceField(
        required=False, choices=[("", "Why it is wrong…"), *WrongReason.choices]
    )

    def clean(self) -> dict:
        cleaned = super().clean()
        if cleaned.get("mark") == "wrong" and not cleaned.get("reason"):
            self.add_error("reason", "Choose why it is wrong.")
        return cleaned
