"""The download package's tables: facts, history, uses, requests and staff looks, as rows with
header words in the traveller's language, written as CSV a spreadsheet opens correctly.

Each table is built once from the package's document (`package.py`) and used twice: as a CSV
file and as a section of `index.html`, so the two never say different things. Values are the
traveller's and the agent's words, untrusted text: a cell a spreadsheet would run as a formula
is written with a leading apostrophe. An erased or redacted value is never written, only the
word for it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from memoryadmin.facts.models import FactStatus
from memoryadmin.facts.topics import topic_label
from memoryadmin.usage.models import UseHow

# A spreadsheet reads a leading =, +, - or @ as a formula (OWASP "CSV injection"); a tab or a
# carriage return first can smuggle one past a naive check.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
BOM = "\ufeff"  # so spreadsheet programs read the file as UTF-8 (the Chinese, the quotes)


@dataclass(frozen=True)
class Table:
    """One table of the package: its file name, its headers in words, its rows of text."""

    name: str  # the CSV member's name, e.g. "facts.csv"
    title: str  # the section's heading in index.html
    headers: tuple[str, ...]
    rows: list[tuple[str, ...]]

    @property
    def labelled(self) -> list[list[tuple[str, str]]]:
        """Each row's cells with their header: on a phone a row reads as a card."""
        return [list(zip(self.headers, row, strict=True)) for row in self.rows]


def shown_time(value: str | date | datetime | None) -> str:
    """Every moment and day the tables show, in one format a spreadsheet reads as a date:
    "2026-12-07 14:03" (the document's own zone), a day as "2026-12-07", nothing as ""."""
    if value is None or value == "":
        return ""
    if isinstance(value, str):  # the document's: a day ("2026-12-07") or a moment
        value = date.fromisoformat(value) if len(value) == 10 else datetime.fromisoformat(value)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return value.isoformat()


def safe_cell(value: Any) -> str:
    """A cell's text, neutralised if a spreadsheet would take it for a formula."""
    text = "" if value is None else str(value)
    if text.startswith(FORMULA_STARTS):
        return "'" + text
    return text


def csv_bytes(table: Table) -> bytes:
    """The table as UTF-8 CSV with a byte-order mark, one header row in words."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([safe_cell(header) for header in table.headers])
    writer.writerows([safe_cell(cell) for cell in row] for row in table.rows)
    return (BOM + out.getvalue()).encode("utf-8")


def _words(headers: Sequence[Promise]) -> tuple[str, ...]:
    return tuple(str(header) for header in headers)


def _value(snapshot: dict[str, Any] | None) -> str:
    """A snapshot's value, or the word "redacted" for a version redacted (never its value)."""
    if snapshot and snapshot.get("redacted_at"):
        return _("redacted")
    return str((snapshot or {}).get("value") or "")


FACT_HEADERS = (
    gettext_lazy("Topic"),
    gettext_lazy("What the assistant remembers"),
    gettext_lazy("State"),
    gettext_lazy("Remembered since"),
    gettext_lazy("Last changed"),
    gettext_lazy("Will be deleted on"),
    gettext_lazy("Your words it was learned from"),
    gettext_lazy("Conversations it was used in"),
    gettext_lazy("Last used"),
)
HISTORY_HEADERS = (
    gettext_lazy("When"),
    gettext_lazy("Topic"),
    gettext_lazy("What happened"),
    gettext_lazy("Before"),
    gettext_lazy("After"),
    gettext_lazy("Why"),
)
USE_HEADERS = (
    gettext_lazy("When"),
    gettext_lazy("Topic"),
    gettext_lazy("How the assistant used it"),
    gettext_lazy("Version"),
)
USE_WORDS = {
    UseHow.INJECTED: gettext_lazy("given to the assistant as the conversation started"),
    UseHow.RECALLED: gettext_lazy("looked up by the assistant during the conversation"),
}
REQUEST_HEADERS = (
    gettext_lazy("Reference"),
    gettext_lazy("What you asked"),
    gettext_lazy("Received on"),
    gettext_lazy("Answer due by"),
    gettext_lazy("Where it stands"),
    gettext_lazy("How"),
)
LOOKED_HEADERS = (
    gettext_lazy("Day"),
    gettext_lazy("Times support agents looked"),
    gettext_lazy("Times privacy officers looked"),
)


def _fact_rows(document: dict[str, Any]) -> list[tuple[str, ...]]:
    rows = []
    for fact in document["facts"]:
        if fact["status"] != FactStatus.ACTIVE:
            state = _("waiting for review")
        elif fact.get("restricted_at"):
            state = _("not in use while we check it")
        else:
            state = _("in use")
        quote = fact["evidence"]["quote"] if fact["evidence"]["source"] == "said" else ""
        rows.append(
            (
                topic_label(fact["key"]),
                fact["value"],
                state,
                shown_time(fact["learned_at"]),
                shown_time(fact["changed_at"]),
                shown_time(fact["expires_at"]),
                quote or "",
                str(fact["use"]["conversations"]),
                shown_time(fact["use"]["last_used_at"]),
            )
        )
    return rows


def _history_row(entry: dict[str, Any]) -> tuple[str, ...]:
    """One change. An erased fact's entry names no fact and shows "erased" for its values; a
    redacted version shows "redacted"; neither ever shows the value itself."""
    if "fact" not in entry:
        topic, before, after = _("a fact that was erased"), _("erased"), _("erased")
    else:
        topic = topic_label(entry["fact"])
        before, after = _value(entry.get("before")), _value(entry.get("after"))
    return (shown_time(entry["at"]), topic, entry["what"], before, after, entry["why"])


def _use_rows(document: dict[str, Any]) -> list[tuple[str, ...]]:
    return [
        (
            shown_time(use["at"]),
            topic_label(use["fact"]) if use["fact"] else _("a fact that was erased"),
            str(USE_WORDS.get(use["how"], use["how"])),
            str(use["version"] or ""),
        )
        for use in document["uses"]
    ]


def _request_rows(document: dict[str, Any]) -> list[tuple[str, ...]]:
    return [
        (
            item["reference"],
            item["what"],
            shown_time(item["received_at"]),
            shown_time(item["due_on"]),
            item["status_words"],
            item["how"],
        )
        for item in document["requests"]
    ]


def _looked_rows(document: dict[str, Any]) -> list[tuple[str, ...]]:
    return [
        (shown_time(day["day"]), str(day["support_agents"]), str(day["privacy_officers"]))
        for day in document["looked"]
    ]


def package_tables(document: dict[str, Any]) -> list[Table]:
    """The five tables, in the order index.html shows them."""
    return [
        Table(
            "facts.csv",
            _("What the assistant remembers"),
            _words(FACT_HEADERS),
            _fact_rows(document),
        ),
        Table(
            "history.csv",
            _("History of changes"),
            _words(HISTORY_HEADERS),
            [_history_row(entry) for entry in document["history"]],
        ),
        Table(
            "uses.csv",
            _("When the assistant used it"),
            _words(USE_HEADERS),
            _use_rows(document),
        ),
        Table("requests.csv", _("Your requests"), _words(REQUEST_HEADERS), _request_rows(document)),
        Table(
            "looked.csv",
            _("Who has looked at your memory"),
            _words(LOOKED_HEADERS),
            _looked_rows(document),
        ),
    ]
