"""The fixed vocabularies of the quality sample: marks, the reasons a fact is wrong, languages
and where a learned fact came from."""

from __future__ import annotations

from django.db import models


class Mark(models.TextChoices):
    CORRECT = "correct", "Correct"
    WRONG = "wrong", "Wrong"


class WrongReason(models.TextChoices):
    NOT_SAID = "not_said", "Not said by the traveller"
    INFERENCE = "inference", "The model's inference"
    ONE_OFF = "one_off", "One-off (this trip only)"
    WRONG_VALUE = "wrong_value", "Wrong value"
    WRONG_TOPIC = "wrong_topic", "Wrong topic or category"
    SENSITIVE = "sensitive", "Should not be kept (sensitive)"


class Language(models.TextChoices):
    EN = "en", "English"
    ZH_HANT = "zh-Hant", "Traditional Chinese"
    OTHER = "other", "Other"


class LearnedBy(models.TextChoices):
    """How a sampled fact was learned: the two automated writers (facts' Origin values)."""

    EXTRACTION = "extraction", "Extraction"
    AGENT = "agent", "Saved by the assistant"
