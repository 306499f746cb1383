"""Shared fixtures. Tests run on real PostgreSQL (`make test` points DATABASE_URL at it)."""

from __future__ import annotations

import os
import re
import traceback
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
# Browser fixtures (Chromium via Playwright): browser, page, phone_page, new_page.
pytest_plugins = ["tests.support.browser"]


def pytest_configure(config) -> None:
    """Under pytest-xdist each worker (gw0, gw1, ...) gets its own Redis database, counting down
    from TEST_BROKER_URL's: the Celery workers and beats its tests start must not take another
    worker's tasks, nor its flushes empty another's queue. (Test databases are pytest-django's
    own per worker: test_<name>_gw0, ...; ports are taken free from the OS.)"""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    base = os.environ.get("TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
    if worker.startswith("gw"):
        match = re.fullmatch(r"(redis://[^/]+)/(\d+)", base)
        if match:
            number = int(match.group(2)) - int(worker[2:])
            if number < 0:
                raise pytest.UsageError(f"TEST_BROKER_URL {base}: too few Redis databases below it")
            os.environ["TEST_BROKER_URL"] = f"{match.group(1)}/{number}"


UNIT_DIR = ROOT / "tests" / "unit"
# Fixtures that reach the database (directly, or through a view or a server).
_DATABASE_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_setup",
        "live_server",
        "client",
        "async_client",
        "admin_client",
        "admin_user",
        "django_user_model",
    }
)


def pytest_ignore_collect(collection_path, config) -> bool | None:
    """`pytest -m unit` reads only tests/unit/: the unit tier is that folder (checked below on
    every other run), and importing the other test modules would cost more than running it."""
    if config.getoption("markexpr", "") != "unit":
        return None
    elsewhere = not (
        UNIT_DIR.is_relative_to(collection_path) or collection_path.is_relative_to(UNIT_DIR)
    )
    return True if elsewhere and collection_path.is_relative_to(ROOT / "tests") else None


def pytest_collection_modifyitems(config, items) -> None:
    """The unit tier is tests/unit/, all of it and nothing else, so that `make unit` (which
    collects only that folder) and `pytest -m unit` run the same tests; and none of it may ask
    for the database."""
    wrong = []
    for item in items:
        inside = item.path.is_relative_to(UNIT_DIR)
        marked = item.get_closest_marker("unit") is not None
        if inside and not marked:
            wrong.append(f"{item.nodeid}: in tests/unit/ but not marked unit")
        elif marked and not inside:
            wrong.append(f"{item.nodeid}: marked unit outside tests/unit/")
        elif marked and (
            item.get_closest_marker("django_db") or _DATABASE_FIXTURES & set(item.fixturenames)
        ):
            wrong.append(f"{item.nodeid}: a unit test asks for the database")
    if wrong:
        raise pytest.UsageError("the unit tier:\n  " + "\n  ".join(wrong))


SERVICES_DIR = str(ROOT / "memoryadmin" / "facts" / "services") + "/"
_WRITE_VERBS = ("INSERT INTO", "UPDATE", "DELETE FROM")


class ForeignFactWrite(AssertionError):
    pass


def _guard_fact_writes(execute, sql, params, many, context):
    """Fail any INSERT/UPDATE/DELETE on memory_fact whose call stack does not pass through
    the facts/services/ package: the audit trail depends on every write going through a service."""
    head = sql.lstrip()[:300].upper()
    if head.startswith(_WRITE_VERBS) and '"MEMORY_FACT"' in head.split(" WHERE ")[0]:
        frames = [frame.filename for frame in traceback.extract_stack()]
        if not any(name.startswith(SERVICES_DIR) for name in frames):
            raise ForeignFactWrite(f"memory_fact written outside facts/services/: {sql[:120]}")
    return execute(sql, params, many, context)


@pytest.fixture(autouse=True)
def fact_write_guard(request):
    """Installed for every test; it only wraps the connection, it opens nothing.

    Not for a test marked `bare_cursor`: with any execute wrapper installed, `hot_cursor` hands
    out Django's wrapped cursor instead of the bare one production uses
    (memoryadmin/db/fastpaths/django_cursor.py), so that slice (the agent's reads,
    tests/facts/test_bare_cursor.py, tests/api/test_lean_get.py) runs without the guard, and
    fails if anything still wraps or logs its queries."""
    if request.node.get_closest_marker("bare_cursor") is None:
        with connection.execute_wrapper(_guard_fact_writes):
            yield
        return
    assert not connection.execute_wrappers, "a bare_cursor test found an execute wrapper"
    yield
    assert not connection.execute_wrappers, "a bare_cursor test left an execute wrapper"
    assert not connection.queries_logged, "a bare_cursor test logs its queries (wrapped cursor)"


@pytest.fixture(autouse=True)
def fresh_memory_config():
    """Settings, retention rules and service tokens are cached per process; each test starts
    from the database (a previous test's rolled-back changes must not linger in a cache)."""
    from memoryadmin.api.tokens import token_cache_clear
    from memoryadmin.facts.selectors import memory_config_invalidate

    memory_config_invalidate()
    token_cache_clear()
    yield
    memory_config_invalidate()
    token_cache_clear()


@pytest.fixture(autouse=True)
def store_on_django_connection(request, settings):
    """DjangoMemoryStore's native async path (the default) reads and writes on connections of
    its own, which cannot see the data of a test's open transaction: a test inside one (a plain
    `django_db`) uses Django's connection. A test on committed data (`transaction=True`,
    `transactional_db`, `live_server`) runs the default native path, as production does."""
    marker = request.node.get_closest_marker("django_db")
    committed = {"transactional_db", "live_server"} & set(request.fixturenames) or (
        marker is not None
        and marker.kwargs.get("transaction", bool(marker.args and marker.args[0]))
    )
    if not committed:
        settings.MEMORY_STORE_NATIVE_ASYNC = False


@pytest.fixture(autouse=True)
def force_login_is_a_complete_staff_sign_in(monkeypatch):
    """`client.force_login(user)` stands for a finished sign-in, which for a privacy admin
    includes the authenticator code (memoryadmin.staff.security). Tests of the code step itself
    sign in through the real forms instead."""
    from django.test.client import ClientMixin

    original = ClientMixin.force_login

    def force_login(self, user, backend=None):
        original(self, user, backend)
        from django_otp import DEVICE_ID_SESSION_KEY
        from django_otp.plugins.otp_totp.models import TOTPDevice

        from memoryadmin.staff.security import requires_second_factor

        if requires_second_factor(user):
            device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
            if device is None:
                device = TOTPDevice.objects.create(user=user, name="test", confirmed=True)
            session = self.session
            session[DEVICE_ID_SESSION_KEY] = device.persistent_id
            session.save()

    monkeypatch.setattr(ClientMixin, "force_login", force_login)


def pytest_terminal_summary(terminalreporter):
    """The upstream state machine runs in shards, on whichever xdist workers: one line for the
    whole run (tests/upstream/test_state_machine.py records each shard's counts)."""
    shards = [
        dict(report.user_properties)["state_machine"]
        for outcome in ("passed", "failed")
        for report in terminalreporter.stats.get(outcome, [])
        if report.when == "call" and "state_machine" in dict(report.user_properties)
    ]
    if shards:
        sequences, calls, full, shortest = zip(*shards, strict=True)
        terminalreporter.write_line(
            f"state machine: {len(shards)} shards, {sum(sequences)} sequences, {sum(calls)}"
            f" calls, {sum(full)} of them 30 calls long (shortest {min(shortest)})"
        )
