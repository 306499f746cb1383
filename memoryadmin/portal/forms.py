"""Portal forms. None of them carries a traveller id: the session says whose facts these are."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from memoryadmin.facts.validation import RESTRICTION_NOTE_MAX_LENGTH
from memoryadmin_client.types import VALUE_MAX_LENGTH


class FactEditForm(forms.Form):
    value = forms.CharField(
        label=_("What the assistant should remember"),
        max_length=VALUE_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={
            "required": _("Write what the assistant should remember, or delete it instead."),
            "max_length": _("Keep it under %(limit_value)d characters."),
        },
    )
    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1, max_value=2**31 - 1)


class RestrictForm(forms.Form):
    note = forms.CharField(
        required=False,
        label=_("What is wrong? (optional)"),
        help_text=_("In your own words. This helps our team check it."),
        max_length=RESTRICTION_NOTE_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 4}),
        error_messages={"max_length": _("Keep it under %(limit_value)d characters.")},
    )


class ChoicesForm(forms.Form):
    learn = forms.BooleanField(
        required=False,
        label=_("Learn from my conversations"),
        help_text=_(
            "When this is off, the assistant doesn't pick up anything new from your chats."
        ),
    )
    use = forms.BooleanField(
        required=False,
        label=_("Let the assistant use what it remembers"),
        help_text=_(
            "When this is off, the assistant answers without using what it remembers. "
            "Nothing is deleted: turn it back on whenever you like."
        ),
    )


class ForgetForm(forms.Form):
    confirm = forms.BooleanField(
        label=_("I understand that this can't be undone."),
        error_messages={
            "required": _("Tick the box to confirm that you want everything deleted."),
        },
    )


class LanguageForm(forms.Form):
    language = forms.ChoiceField(choices=settings.LANGUAGES)
    next = forms.CharField(required=False, max_length=500)
