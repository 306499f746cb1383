"""Who is acting. Every service takes one explicitly; it ends up on the FactEvent row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .models import ActorKind, Origin

_ORIGIN_BY_KIND = {
    ActorKind.AGENT: Origin.AGENT,
    ActorKind.EXTRACTION: Origin.EXTRACTION,
    ActorKind.STAFF: Origin.STAFF,
    ActorKind.CUSTOMER: Origin.CUSTOMER,
    ActorKind.SYSTEM: Origin.IMPORT,
    ActorKind.RETENTION: Origin.IMPORT,
}


@dataclass(frozen=True)
class Actor:
    kind: ActorKind
    label: str
    user: Any = None  # a django.contrib.auth user for staff actions

    @classmethod
    def staff(cls, user: Any) -> Actor:
        return cls(ActorKind.STAFF, user.get_username(), user)

    @classmethod
    def agent(cls, token: Any) -> Actor:
        """`token` is a ServiceToken (its name is recorded) or a plain label."""
        name = getattr(token, "name", None) or str(token)
        return cls(ActorKind.AGENT, f"token:{name}")

    @classmethod
    def extraction(cls, label: str = "extraction") -> Actor:
        return cls(ActorKind.EXTRACTION, label)

    @classmethod
    def customer(cls, subject_id: str) -> Actor:
        return cls(ActorKind.CUSTOMER, f"traveller:{subject_id}")

    @classmethod
    def retention(cls, rule: Any) -> Actor:
        name = getattr(rule, "name", None) or str(rule)
        return cls(ActorKind.RETENTION, f"rule:{name}")

    @classmethod
    def system(cls, label: str) -> Actor:
        return cls(ActorKind.SYSTEM, label)

    @property
    def origin(self) -> Origin:
        return _ORIGIN_BY_KIND[self.kind]

    @property
    def rewriter(self) -> tuple[str, str]:
        """(rewritten_by, rewritten_by_label) for a value this actor writes: a person's kind,
        with a staff member's display name; ("", "") for the agent, extraction or an import."""
        if self.kind == ActorKind.STAFF:
            full = self.user.get_full_name() if hasattr(self.user, "get_full_name") else ""
            return str(ActorKind.STAFF), (full or self.label)[:150]
        if self.kind == ActorKind.CUSTOMER:
            return str(ActorKind.CUSTOMER), ""
        return "", ""

    @property
    def is_automated(self) -> bool:
        """Facts written by the agent or extraction are inferences and get sensitivity review."""
        return self.kind in (ActorKind.AGENT, ActorKind.EXTRACTION)
