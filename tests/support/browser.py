"""Browser-test plumbing shared by every app: one Chromium per session, a fresh context per test.

Registered as a pytest plugin from tests/conftest.py. Debian's Chromium is driven through
Playwright (`executable_path`); Playwright's own browser download is never used. Tests that use
these fixtures should carry `@pytest.mark.browser` and the `live_server` fixture.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
# Git-ignored artifacts/ by default; `make screenshots` points this at docs/screenshots/ on purpose.
SCREENSHOTS = Path(os.environ.get("SCREENSHOTS_DIR") or ROOT / "artifacts" / "screenshots")
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
SERIOUS = ("serious", "critical")


@pytest.hookimpl(trylast=True)  # after pytest-django's own reordering by database use
def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    """Run the browser tests last. Playwright's sync API keeps an asyncio loop running in the
    test thread from the moment the session browser starts, and `asyncio.run` (used by the
    async client tests) refuses to run inside it; so no other test may come after them."""
    uses_browser = [item for item in items if "browser" in getattr(item, "fixturenames", ())]
    if uses_browser:
        others = [item for item in items if "browser" not in getattr(item, "fixturenames", ())]
        items[:] = others + uses_browser
    # The longest items first (the state machine's shards): under pytest-xdist they spread over
    # the workers early, and the short tests fill in around them instead of one worker finishing
    # the run alone.
    longest = [item for item in items if item.get_closest_marker("statemachine")]
    if longest:
        items[:] = longest + [item for item in items if item not in longest]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One Chromium for the whole run: launching it costs about a second each time.

    Playwright's sync API keeps an event loop in the test thread, so Django's ORM would refuse
    to run in the same test (SynchronousOnlyOperation). Browser tests call the ORM on purpose,
    from plain synchronous code, so the guard is switched off for the rest of the session.
    """
    from playwright.sync_api import sync_playwright

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True
        )
        yield chromium
        chromium.close()


@pytest.fixture
def new_page(browser: Any) -> Iterator[Callable[..., Any]]:
    """Open a page in a fresh context (own cookies): `new_page(viewport=PHONE)` for a phone.

    Calling it twice in one test gives two independent sessions (two users, two tabs that do
    not share a login, ...). Every page records JavaScript dialogs in `dialogs_of(page)` and
    dismisses them, so a test can assert that nothing called alert().
    """
    contexts = []

    def make(viewport: dict[str, int] | None = None, **context_args: Any) -> Any:
        context = browser.new_context(viewport=viewport or DESKTOP, **context_args)
        context.set_default_timeout(10_000)
        contexts.append(context)
        page = context.new_page()
        _DIALOGS[id(page)] = []
        page.on("dialog", lambda dialog: _record_dialog(page, dialog))
        return page

    yield make
    for context in contexts:
        for page in context.pages:
            _DIALOGS.pop(id(page), None)
        context.close()


@pytest.fixture
def page(new_page: Callable[..., Any]) -> Any:
    """A desktop-sized page (1280x800) in its own context."""
    return new_page()


@pytest.fixture
def phone_page(new_page: Callable[..., Any]) -> Any:
    """A 390x844 page (a small phone) in its own context."""
    return new_page(viewport=PHONE)


_DIALOGS: dict[int, list[str]] = {}


def _record_dialog(page: Any, dialog: Any) -> None:
    _DIALOGS.setdefault(id(page), []).append(dialog.message)
    dialog.dismiss()


def dialogs_of(page: Any) -> list[str]:
    """Messages of every alert/confirm/prompt the page tried to show."""
    return _DIALOGS.get(id(page), [])


def staff_login(page: Any, live_server: Any, user: Any, password: str) -> Any:
    """Log a staff user in through the real login form; the one place the login flow lives.
    A privacy admin also passes the authenticator-code step.

    `user` is a User or a username. Returns the page, now on the page after login.
    """
    username = user if isinstance(user, str) else user.get_username()
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    with page.expect_navigation():
        page.get_by_role("button", name="Log in").click()
    if "/login/verify/" in page.url:  # a privacy admin: the authenticator code comes next
        code = authenticator_code(username)  # sets up the authenticator if the test made none
        if not page.get_by_label("Authentication code").count():
            page.reload()  # the page was drawn before the authenticator existed
        page.get_by_label("Authentication code").fill(code)
        with page.expect_navigation():
            page.get_by_role("button", name="Verify").click()
    return page


def authenticator_code(username: str) -> str:
    """The code the user's authenticator app would show now (the device is created if the test
    made the user without one). A code is good once per 30 s step, so the step is reset first:
    two sign-ins of one user within 30 s both work."""
    from django.contrib.auth import get_user_model
    from django_otp.oath import TOTP
    from django_otp.plugins.otp_totp.models import TOTPDevice

    user = get_user_model().objects.get(username=username)
    device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
    if device is None:
        device = TOTPDevice.objects.create(user=user, name="browser test", confirmed=True)
    TOTPDevice.objects.filter(pk=device.pk).update(last_t=-1, throttling_failure_count=0)
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    return f"{totp.token():0{device.digits}d}"


def assert_one_h1(page: Any) -> None:
    """The page a click led to has loaded and has one h1. A click that navigates returns once the
    new URL is committed, before its document is parsed: a bare count could read an empty page
    (seen once in CI), so this waits for the load and lets `expect` retry."""
    from playwright.sync_api import expect

    page.wait_for_load_state()
    expect(page.locator("h1")).to_have_count(1)


def click(locator: Any, **kwargs: Any) -> None:
    """Click, then wait for the load of the page the click led to, if it led anywhere.

    Playwright's click returns once a navigation it started has committed, before the new
    document is parsed: a bare count, `all_inner_texts()` or `page.url` check right after it
    could read a page still empty (CI read [] from the portal's requests list). Every browser
    test clicks through this, so no test reads too soon. A click that stays on the page (a
    disclosure, a download) returns at once: its document is already loaded."""
    locator.click(**kwargs)
    locator.page.wait_for_load_state()


def page_check(page: Any, name: str) -> None:
    """What every page a browser test visits must pass: one h1 once loaded, no serious axe
    finding, a screenshot, and no script ran (no dialog)."""
    assert_one_h1(page)
    assert_no_serious_axe_violations(page)
    screenshot(page, name)
    assert dialogs_of(page) == []


def screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """Save <name>.png in SCREENSHOTS (`make screenshots`: docs/screenshots/, which the README
    shows)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def assert_no_serious_axe_violations(page: Any) -> None:
    """Run axe-core on the page as it is now; fail listing every serious or critical finding."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    serious = [v for v in results.response["violations"] if v.get("impact") in SERIOUS]
    if serious:
        lines = []
        for violation in serious:
            targets = [", ".join(map(str, node["target"])) for node in violation["nodes"][:5]]
            lines.append(
                f"{violation['impact']}: {violation['id']} ({violation['help']}) at {targets}"
            )
        pytest.fail(f"axe on {page.url}:\n" + "\n".join(lines))
