"""factory-boy factories. Facts are created through the services, like everything else."""

from __future__ import annotations

import functools

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import MemoryFact, Subject
from memoryadmin.facts.validation import normalize_key


@functools.cache
def _staff_password_hash() -> str:
    """One hash of the staff users' password per run: each costs a quarter of a second of CPU
    (PBKDF2 at Django's 1,000,000 iterations) and the suite makes hundreds of staff users. Each
    still holds a real PBKDF2 hash of "correct-horse-battery", checked in full on a sign-in."""
    return make_password("correct-horse-battery")


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"staff{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.test")
    is_staff = True
    password = factory.LazyFunction(_staff_password_hash)


class SubjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Subject
        django_get_or_create = ("subject_id",)

    subject_id = factory.Sequence(lambda n: f"traveller-{n:04d}")


class FactFactory(factory.Factory):
    """Builds a fact by calling fact_upsert with the given actor (staff import by default)."""

    class Meta:
        model = MemoryFact

    subject_id = factory.Sequence(lambda n: f"traveller-{n:04d}")
    key = factory.Sequence(lambda n: f"topic_{n}")
    value = "Prefers aisle seats"
    category = "preference"
    actor = factory.LazyFunction(lambda: Actor.system("factory"))
    session_tag = ""

    @classmethod
    def _create(cls, model_class, *, subject_id, key, value, category, actor, session_tag):
        services.fact_upsert(
            subject_id=subject_id,
            facts=[services.FactDraft(key, value, category)],
            actor=actor,
            reason="test fixture",
            session_tag=session_tag,
        )
        return model_class.objects.get(subject_id=subject_id, key=normalize_key(key))
