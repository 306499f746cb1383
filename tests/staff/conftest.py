"""Staff accounts for the dashboard tests, one per role plus one without a role.

The role groups come from a data migration, but live_server/transactional tests flush the
database, so the fixtures create the groups themselves when they are missing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN, VIEWER
from tests.factories import UserFactory

PASSWORD = "correct-horse-battery"


def make_staff(username: str, role: str | None):
    user = UserFactory(username=username)
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def viewer(db):
    return make_staff("vera", VIEWER)


@pytest.fixture
def editor(db):
    return make_staff("eddie", EDITOR)


@pytest.fixture
def privacy_admin(db):
    return make_staff("priya", PRIVACY_ADMIN)


@pytest.fixture
def no_role(db):
    return make_staff("nobody", None)
