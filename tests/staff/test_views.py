"""The staff landing page: who may see it, and the same queries for 3 or 60 travellers."""

import pytest
from django.contrib.auth.models import Group

from memoryadmin.facts.actors import Actor
from memoryadmin.staff.roles import EDITOR, VIEWER, has_role, role_of
from tests.factories import FactFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer():
    user = UserFactory(username="vera")
    user.groups.add(Group.objects.get_or_create(name=VIEWER)[0])
    return user


def test_anonymous_is_sent_to_login(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_a_user_without_a_staff_role_is_refused(client):
    client.force_login(UserFactory(username="nobody"))
    assert client.get("/").status_code == 403


def test_roles_are_ranked(viewer):
    assert role_of(viewer) == VIEWER
    assert has_role(viewer, VIEWER) and not has_role(viewer, EDITOR)


@pytest.mark.parametrize("travellers", [3, 60])
def test_home_lists_travellers_with_constant_queries(
    client, viewer, travellers, django_assert_max_num_queries
):
    for index in range(travellers):
        FactFactory(subject_id=f"T-{index:03d}", key="seat", value="Aisle")
        FactFactory(
            subject_id=f"T-{index:03d}",
            key="mobility",
            value="Uses a wheelchair",
            actor=Actor.agent("host"),
        )
    client.force_login(viewer)
    with django_assert_max_num_queries(6):
        response = client.get("/")
    body = response.content.decode()
    assert response.status_code == 200
    assert f"T-{travellers - 1:03d}" in body  # newest first
    assert body.count("<code>T-") == min(travellers, 50)
    assert '<span class="badge warn">1</span>' in body


def test_search_input_is_escaped(client, viewer):
    client.force_login(viewer)
    body = client.get("/", {"q": "<script>alert(1)</script>"}).content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;" in body
