"""gunicorn's access log without secrets: no query strings (gunicorn.conf.py's format uses the
bare path), and the one-time secret of a portal link cut out of the path.

A portal link is `/portal/open/<secret>`: single-use and short-lived, but logs outlive both and
are read by more people than the traveller it was meant for."""

from __future__ import annotations

import re
from typing import Any

from gunicorn.glogging import Logger

_SECRET_IN_PATH = re.compile(r"^(/portal/open/)[^/?#]+")


def redact_path(path: str) -> str:
    return _SECRET_IN_PATH.sub(r"\1[redacted]", path)


class RedactingLogger(Logger):
    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        atoms["U"] = redact_path(atoms.get("U", ""))
        # The id the application answered with (memoryadmin/observability/requestid.py).
        atoms["request_id"] = atoms.get("{x-request-id}o", "-")
        return atoms
