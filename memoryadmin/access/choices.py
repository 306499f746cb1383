"""The fixed vocabularies of the access record."""

from django.db import models


class AccessKind(models.TextChoices):
    TRAVELLER = "traveller", "traveller page"
    FACT_HISTORY = "fact_history", "fact history"
    TIMELINE = "timeline", "timeline"
    REVEAL = "reveal", "reveal of a sensitive value"
    EXPORT = "export", "export made for them"
    PRIVACY_REQUEST = "privacy_request", "privacy-request page"
    SEARCH = "search", "search that returned them"
    SIGN_IN = "sign_in", "sign-in"
    AS_OF = "as_of", "memory as of a date"


class LoginMethod(models.TextChoices):
    SSO = "sso", "single sign-on"
    PASSWORD = "password", "local password (break-glass)"
    UNKNOWN = "", "unknown"


# Reads that open one traveller's memory (a search result only lists them).
OPENING_KINDS = (
    AccessKind.TRAVELLER,
    AccessKind.FACT_HISTORY,
    AccessKind.TIMELINE,
    AccessKind.REVEAL,
    AccessKind.EXPORT,
    AccessKind.PRIVACY_REQUEST,
    AccessKind.AS_OF,
)
