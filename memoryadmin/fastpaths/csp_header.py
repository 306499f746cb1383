"""FASTPATH_CSP_HEADER: an answer that uses the site-wide Content-Security-Policy unchanged (no
nonce, no per-view decorator, no report-only policy, no excluded prefixes) gets the header built
once per value of the setting instead of on every answer. Building it was half of what the whole
middleware stack cost an agent request.

Written against django-csp 4.0: to know that an answer is that plain case it reads the private
attributes django-csp's decorators set on a response (`_csp_config`, `_csp_update`,
`_csp_replace`, their `_ro` twins, `_csp_exempt`, `_csp_exempt_ro`) and its nonce on the
request (`_csp_nonce`), and sets `request.csp_nonce` after the answer as django-csp does, with
its `CheckableLazyObject` and `CSPMiddleware._csp_nonce_post_response`.

Safe fallback (the setting off, or django-csp not at major version 4, or those names gone):
django-csp's own `process_response`, on every answer."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponseBase

from . import broken, enabled, fits

SETTING = "FASTPATH_CSP_HEADER"

# What a view (django-csp's decorators) sets on a response to change or drop its policy.
_CSP_RESPONSE_CHANGES = (
    "_csp_config",
    "_csp_update",
    "_csp_replace",
    "_csp_config_ro",
    "_csp_update_ro",
    "_csp_replace_ro",
)
_CSP_RESPONSE_EXEMPTIONS = ("_csp_exempt", "_csp_exempt_ro")
_site_policy: tuple[object, str] | None = None  # (the setting's value, its header)
_checked = False


@receiver(setting_changed)
def _forget_site_policy(*, setting: str, **kwargs: Any) -> None:
    global _site_policy
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _site_policy = None


def site_policy_header() -> str:
    """The Content-Security-Policy header of settings.CONTENT_SECURITY_POLICY, as django-csp
    builds it, built once per value of the setting."""
    from csp.utils import build_policy

    global _site_policy
    policy = getattr(settings, "CONTENT_SECURITY_POLICY", None)
    if _site_policy is None or _site_policy[0] is not policy:
        _site_policy = (policy, build_policy())
    return _site_policy[1]


def _fits(middleware: Any) -> bool:
    """django-csp 4 with the names this trick reads (checked once per process)."""
    global _checked
    if _checked:
        return True
    try:
        from csp import middleware as csp_middleware
        from csp import utils as csp_utils
        from csp.constants import HEADER
    except ImportError as exc:
        broken(SETTING, f"django-csp's {exc.name} is gone")
        return False
    _checked = fits(
        SETTING,
        "django-csp",
        4,
        (csp_middleware, "CheckableLazyObject"),
        (csp_utils, "build_policy"),
        (middleware, "_csp_nonce_post_response"),
    ) and bool(HEADER)
    return _checked


def process_response(
    middleware: Any, request: HttpRequest, response: HttpResponseBase
) -> HttpResponseBase | None:
    """The answer with the site's header, or None: django-csp must answer this one itself."""
    if not (enabled(SETTING) and _uses_the_site_policy(request, response) and _fits(middleware)):
        return None
    from csp.constants import HEADER
    from csp.middleware import CheckableLazyObject

    header = site_policy_header()
    if header and HEADER not in response:
        response[HEADER] = header
    # As django-csp does once the header is written: a nonce asked for later is an error.
    request.csp_nonce = CheckableLazyObject(middleware._csp_nonce_post_response)
    return response


def _uses_the_site_policy(request: HttpRequest, response: HttpResponseBase) -> bool:
    policy = getattr(settings, "CONTENT_SECURITY_POLICY", None)
    return bool(
        policy
        and not policy.get("EXCLUDE_URL_PREFIXES")
        and not getattr(settings, "CONTENT_SECURITY_POLICY_REPORT_ONLY", None)
        and not (settings.DEBUG and response.status_code in (404, 500))
        and getattr(request, "_csp_nonce", None) is None
        and all(getattr(response, name, None) is None for name in _CSP_RESPONSE_CHANGES)
        and not any(getattr(response, name, False) for name in _CSP_RESPONSE_EXEMPTIONS)
    )
