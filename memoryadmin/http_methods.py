"""Which HTTP methods a page answers, declared once on each staff and portal view: a page that
only shows something answers GET and HEAD, a form page GET, HEAD and POST, an action POST; any
other method gets 405 with an Allow header (Django's `require_http_methods`). The declaration is
kept on the view (`http_methods`), so a test walks every URL and finds none undeclared."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.views.decorators.http import require_http_methods

View = TypeVar("View", bound=Callable[..., Any])


def allow(*methods: str) -> Callable[[View], View]:
    """The view answers only `methods`; other methods get 405."""

    def decorate(view: View) -> View:
        wrapped = require_http_methods(list(methods))(view)
        wrapped.http_methods = frozenset(methods)  # type: ignore[attr-defined]
        return wrapped  # type: ignore[return-value]

    return decorate


read_only = allow("GET", "HEAD")
form_page = allow("GET", "HEAD", "POST")
post_only = allow("POST")
