"""Reading the download package in tests: its members, memory.json, a CSV read back."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from typing import Any

BOM = b"\xef\xbb\xbf"


def members(body: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def memory(body: bytes) -> dict[str, Any]:
    """memory.json of a package (the export document, for programs)."""
    return json.loads(members(body)["memory.json"])


def rows(body: bytes, name: str) -> list[list[str]]:
    """A CSV member read back the way a program would: BOM stripped by utf-8-sig."""
    text = members(body)[name].decode("utf-8-sig")
    return list(csv.reader(io.StringIO(text)))
