"""gunicorn's access log without secrets: no query strings (gunicorn.conf.py's format uses the
bare path), and the one-time secret of a portal link cut out of the path.

A portal link is `/portal/open/<secret>`: single-use and short-lived, but logs outlive both and
are read by more people than the traveller it was meant for.

A fact's key names its topic ("wheelchair", "pregnancy") and outlives an erasure in a log: in
an agent-API path `/api/v1/subjects/<id>/facts/<key>` and a staff path
`/staff/travellers/<id>/facts/<key>/...` the key segment is written as its keyed hash
(`facts.keyhash.key_digest`, the digest the erased history keeps), so the airline's log pipeline
never receives topics and a support engineer can still match a line to a history. A portal path
`/portal/facts/<key>/...` names no traveller (the session does), so its key is written "[key]":
a digest without the traveller would be the same for every traveller's topic."""

from __future__ import annotations

import logging
import re
from typing import Any

from gunicorn.glogging import Logger

_SECRET_IN_PATH = re.compile(r"^(/portal/open/)[^/?#]+")
_FACT_KEY_IN_PATH = re.compile(r"^(/api/v1/subjects/)([^/]+)(/facts/)([^/]+)$")
_NOT_KEYS = {"search"}  # /facts/search is a route, not a key
_STAFF_FACT_KEY = re.compile(r"^(/staff/travellers/)([^/]+)(/facts/)([^/]+)(/.*)?$")
_PORTAL_FACT_KEY = re.compile(r"^(/portal/facts/)[^/]+(/.*)?$")


def _digest(subject_id: str, key: str) -> str:
    try:
        from memoryadmin.facts.keyhash import key_digest
        from memoryadmin_client.text import normalize_key

        return key_digest(subject_id, normalize_key(key))
    except Exception:  # noqa: BLE001 - settings not loaded: still never log the key
        return "[key]"


def _key_hash(match: re.Match[str]) -> str:
    prefix, subject_id, facts, key = match.groups()
    if key in _NOT_KEYS:
        return match.group(0)
    return f"{prefix}{subject_id}{facts}{_digest(subject_id, key)}"


def _staff_key_hash(match: re.Match[str]) -> str:
    prefix, subject_id, facts, key, rest = match.groups()
    return f"{prefix}{subject_id}{facts}{_digest(subject_id, key)}{rest or ''}"


def redact_path(path: str) -> str:
    path = _SECRET_IN_PATH.sub(r"\1[redacted]", path)
    path = _STAFF_FACT_KEY.sub(_staff_key_hash, path)
    path = _PORTAL_FACT_KEY.sub(lambda m: f"{m.group(1)}[key]{m.group(2) or ''}", path)
    return _FACT_KEY_IN_PATH.sub(_key_hash, path)


class RedactingLogger(Logger):
    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        atoms["U"] = redact_path(atoms.get("U", ""))
        # The id the application answered with (memoryadmin/observability/requestid.py).
        atoms["request_id"] = atoms.get("{x-request-id}o", "-")
        return atoms


class PathRedactingFilter(logging.Filter):
    """The same redaction for the lines Django writes about a request ("Forbidden (CSRF token
    missing.): /portal/facts/<key>/change", "Internal Server Error: /staff/..."): every
    argument that is a path goes through `redact_path` before the line is formatted."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(
                redact_path(arg) if isinstance(arg, str) and arg.startswith("/") else arg
                for arg in record.args
            )
        return True
