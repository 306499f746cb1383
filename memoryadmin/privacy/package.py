""" "Download my data" as a package: one ZIP a person and a program can both read.

- `memory.json` for programs: the export document (`export.py`) with the use receipts, the
  traveller's requests and the staff looks, under its own `schema_version` (README, "The
  download package").
- `facts.csv`, `history.csv`, `uses.csv`, `requests.csv`, `looked.csv` for spreadsheets
  (`package_tables.py`: UTF-8 with a byte-order mark, headers in words, formulas neutralised).
- `index.html` to read and print: one page, inline CSS, no script, nothing fetched from
  anywhere, every value escaped by the template.

All in the traveller's language. Deterministic: fixed member times and attributes, sorted
names, so the same data at the same moment gives the same bytes, and the SHA-256 recorded on the
access request identifies exactly what was handed over. The portal hands it to the traveller,
staff hand the same package over for an access request that came by phone, e-mail or letter;
built on request and never stored, so erasure has no copy to chase.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.template.loader import render_to_string
from django.utils import timezone, translation

from memoryadmin.access import selectors as access_selectors
from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.usage import selectors as usage_selectors

from . import selectors
from .export import traveller_export
from .package_tables import Table, csv_bytes, package_tables, shown_time
from .request_words import CHANNEL_WORDS, request_words

# Bump when a member or field of memory.json changes meaning or goes; adding one is compatible.
SCHEMA_VERSION = 1
# Every member's time in the archive: the earliest a ZIP can hold, the same for every download.
MEMBER_TIME = (1980, 1, 1, 0, 0, 0)
LOOKED_DAYS = 1000  # the access record is kept 400 days: every day it still holds


@dataclass(frozen=True)
class Package:
    filename: str
    body: bytes

    @property
    def sha256(self) -> str:
        """The fingerprint an access request closes with."""
        return hashlib.sha256(self.body).hexdigest()


def _requests(subject_id: str) -> list[dict[str, Any]]:
    return [
        {
            "reference": request.number,
            "kind": request.kind,
            "what": request_words(request)[0],
            "received_at": timezone.localtime(request.received_at).isoformat(),
            "due_on": request.due_on.isoformat(),
            "status": request.status,
            "status_words": request_words(request)[1],
            "channel": request.channel,
            "how": str(CHANNEL_WORDS.get(request.channel, request.channel)),
            "receipt": str((request.evidence or {}).get("receipt") or "") or None,
        }
        for request in selectors.traveller_requests(subject_id, limit=None)
    ]


def _uses(subject_id: str) -> list[dict[str, Any]]:
    """Each time the assistant had a fact in a conversation: when, which fact (none once it was
    erased: a receipt never held its key), how, and the version it had."""
    keys = {fact.pk: fact.key for fact in fact_selectors.subject_facts(subject_id)}
    return [
        {
            "at": timezone.localtime(use.used_at).isoformat(),
            "fact": None if use.erased_at else keys.get(use.fact_id),
            "how": use.how,
            "version": use.version,
        }
        for use in usage_selectors.subject_uses(subject_id)
    ]


def _looked(subject_id: str) -> list[dict[str, Any]]:
    """As the portal's "Who has looked" shows it: days, and how many times each kind of staff
    looked; never a name."""
    return [
        {"day": day.day.isoformat(), "support_agents": day.support, "privacy_officers": day.privacy}
        for day in access_selectors.traveller_looks_by_day(subject_id, limit=LOOKED_DAYS)
    ]


def package_document(subject_id: str, *, now: datetime) -> dict[str, Any]:
    """memory.json: the schema version and the traveller first, then the export document."""
    return {
        "schema_version": SCHEMA_VERSION,
        "traveller": subject_id,
        "language": translation.get_language(),
        **traveller_export(subject_id, now=now),
        "uses": _uses(subject_id),
        "requests": _requests(subject_id),
        "looked": _looked(subject_id),
    }


def _index_html(document: dict[str, Any], tables: list[Table]) -> bytes:
    context = {
        "document": document,
        "exported": shown_time(document["exported_at"]),
        "switches": list(document["switches"].values()),
        "tables": tables,
    }
    return render_to_string("privacy/package_index.html", context).encode("utf-8")


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=MEMBER_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, whatever the server runs on
            info.external_attr = 0o644 << 16
            archive.writestr(info, members[name], compresslevel=9)
    return out.getvalue()


def package_filename(subject_id: str, *, now: datetime) -> str:
    """`memory-<traveller>-<day>.zip`, the day in the document's zone; anything in the id that
    a file name should not hold becomes `_`."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", subject_id)
    return f"memory-{safe}-{timezone.localdate(now).isoformat()}.zip"


def traveller_package(
    subject_id: str, *, language: str | None = None, now: datetime | None = None
) -> Package:
    """The package for one traveller, in `language` (default: the active one) as of `now`."""
    now = now or timezone.now()
    with translation.override(language or translation.get_language()):
        document = package_document(subject_id, now=now)
        tables = package_tables(document)
        members = {table.name: csv_bytes(table) for table in tables}
        members["memory.json"] = json.dumps(document, ensure_ascii=False, indent=2).encode()
        members["index.html"] = _index_html(document, tables)
    return Package(package_filename(subject_id, now=now), _zip(members))
