"""Roles are groups, ranked; the data migration creates them; createstaffuser makes accounts."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.db import connection

from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN, ROLES, VIEWER, has_role, role_of
from tests.staff.conftest import make_staff

pytestmark = pytest.mark.django_db


def test_the_role_groups_exist_without_seed_data():
    assert set(Group.objects.filter(name__in=ROLES).values_list("name", flat=True)) == set(ROLES)


def test_roles_are_ranked():
    viewer = make_staff("v", VIEWER)
    assert role_of(viewer) == VIEWER
    assert has_role(viewer, VIEWER) and not has_role(viewer, EDITOR)
    admin = make_staff("p", PRIVACY_ADMIN)
    assert has_role(admin, EDITOR) and has_role(admin, PRIVACY_ADMIN)
    assert role_of(make_staff("n", None)) is None


def test_createstaffuser_makes_an_account_with_one_role(monkeypatch):
    monkeypatch.setenv("STAFF_PASSWORD", "a-long-enough-secret-2026")
    call_command("createstaffuser", "sam", "--role", "editor")
    user = get_user_model().objects.get(username="sam")
    assert role_of(user) == EDITOR and user.check_password("a-long-enough-secret-2026")
    call_command("createstaffuser", "sam", "--role", "viewer")  # changing the role replaces it
    user = get_user_model().objects.get(username="sam")
    assert list(user.groups.values_list("name", flat=True)) == [VIEWER]


def test_createstaffuser_refuses_a_weak_password(monkeypatch):
    monkeypatch.setenv("STAFF_PASSWORD", "short")
    with pytest.raises(CommandError):
        call_command("createstaffuser", "sam", "--role", "editor")
    assert not get_user_model().objects.filter(username="sam").exists()


def test_fact_values_have_a_trigram_index_on_postgresql():
    assert connection.vendor == "postgresql"  # the suite always runs on PostgreSQL
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_fact_value_trgm'")
        (definition,) = cursor.fetchone()
    assert "gin_trgm_ops" in definition
