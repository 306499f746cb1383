"""The Content-Security-Policy in a real browser: the pages work under it, and Chromium reports no
violation (an inline script or style, or anything from another origin, would be one)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser


def _violations(page: Any) -> list[str]:
    seen: list[str] = []
    page.on(
        "console",
        lambda message: (
            seen.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    return seen


def test_the_api_docs_work_under_the_policy(page, live_server):
    violations = _violations(page)

    page.goto(f"{live_server.url}/api/v1/docs/")
    page.locator(".swagger-ui .info .title").wait_for(timeout=15_000)
    page.locator(".opblock").first.wait_for(timeout=15_000)

    assert "memoryadmin agent API" in page.locator(".swagger-ui .info .title").inner_text()
    assert violations == []


def test_the_login_and_code_pages_have_no_violation(page, live_server):
    violations = _violations(page)

    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").wait_for()

    assert violations == []
