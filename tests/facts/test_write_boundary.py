"""Only the facts/services/ package may change MemoryFact rows: the audit trail depends on it.

Two checks: tests/conftest.py fails any test whose SQL writes memory_fact from a call stack that
does not pass through facts/services/ (demonstrated below), and a static scan catches code that no
test happens to run.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.db import transaction
from django.utils import timezone

from memoryadmin.facts import sql as facts_sql
from memoryadmin.facts import tables
from memoryadmin.facts.models import MemoryFact, Subject
from tests.conftest import ForeignFactWrite
from tests.factories import FactFactory

ROOT = Path(__file__).resolve().parents[2]
SQL_MODULE = ROOT / "memoryadmin" / "facts" / "sql.py"
MUTATORS = {
    "save",
    "delete",
    "update",
    "create",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
    "raw",
    "execute",
}


@pytest.mark.django_db
def test_the_runtime_guard_refuses_a_write_outside_services():
    Subject.objects.create(subject_id="s-1")
    now = timezone.now()
    with pytest.raises(ForeignFactWrite), transaction.atomic():
        MemoryFact.objects.create(
            subject_id="s-1",
            key="seat",
            value="Aisle",
            category="preference",
            created_at=now,
            updated_at=now,
            origin="staff",
        )
    fact = FactFactory(subject_id="s-2", key="seat")  # through fact_upsert: allowed
    with pytest.raises(ForeignFactWrite), transaction.atomic():
        MemoryFact.objects.filter(pk=fact.pk).update(value="Window")
    with pytest.raises(ForeignFactWrite), transaction.atomic():
        fact.delete()


# A statement that writes memory_fact: INSERT INTO / UPDATE / DELETE FROM the table itself
# (not memory_fact_event, and not a statement that only reads it, e.g. in a subquery).
_WRITES_FACTS = re.compile(
    rf'\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?{tables.MEMORY_FACT}"?(?![\w"])', re.I
)
# The statements of facts/sql.py that write memory_fact, by name: only the allowed modules may
# execute them, so nothing else may name them.
WRITE_CONSTANTS = {
    name
    for name, value in vars(facts_sql).items()
    if name.isupper() and isinstance(value, str) and _WRITES_FACTS.search(value)
}


def _text(node: ast.AST) -> str | None:
    """A string literal's text; an f-string's with the table names of facts/tables.py filled in
    (so that `f"DELETE FROM {MEMORY_FACT}"` reads as what it is)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return None
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        elif isinstance(value, ast.FormattedValue):
            name = ast.unparse(value.value).rsplit(".", 1)[-1]
            parts.append(str(getattr(tables, name, "?")))
    return "".join(parts)


def _offences(path: Path, root: Path = ROOT) -> list[str]:
    """Lines that call a mutating method on something that names MemoryFact or `.facts`, hold
    SQL that writes memory_fact, or name one of facts/sql.py's statements that write it (named
    relative to `root`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        is_mutator_call = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
        )
        if is_mutator_call:
            target = ast.unparse(node.func.value)
            if "MemoryFact" in target or target.endswith(".facts") or "memory_fact" in target:
                found.append(f"{where}: {ast.unparse(node)[:80]}")
        text = _text(node)
        if text is not None and _WRITES_FACTS.search(text):
            found.append(f"{where}: raw SQL on memory_fact")
        named = (
            node.id
            if isinstance(node, ast.Name)
            else node.attr
            if isinstance(node, ast.Attribute)
            else None
        )
        if named in WRITE_CONSTANTS:
            found.append(f"{where}: uses facts.sql.{named}, which writes memory_fact")
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in WRITE_CONSTANTS:
                    found.append(f"{where}: imports facts.sql.{alias.name}")
    return found


def test_no_module_outside_services_mutates_memory_facts():
    # erasure.py is the one erasure path; only services call it (the runtime guard checks that
    # every write to memory_fact passes through facts/services/). facts/sql.py holds the
    # statements and runs none; it is scanned for naming them only where it defines them.
    allowed = {
        *(ROOT / "memoryadmin" / "facts" / "services").rglob("*.py"),
        ROOT / "memoryadmin" / "facts" / "erasure.py",
        SQL_MODULE,
    }
    sources = [
        path
        for path in (ROOT / "memoryadmin").rglob("*.py")
        if path not in allowed and "migrations" not in path.parts
    ]
    assert sources, "the scan found no code to check"
    offences = [line for path in sources for line in _offences(path)]
    assert offences == []
    assert {"SQL_INSERT_FACTS", "SQL_UPDATE_FACTS", "SQL_ERASE_FACTS"} <= WRITE_CONSTANTS


def test_facts_sql_executes_nothing():
    tree = ast.parse(SQL_MODULE.read_text(encoding="utf-8"))
    calls = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert calls == []


def test_the_static_scan_notices_an_offence(tmp_path):
    bad = tmp_path / "scan_probe.py"  # not in the source tree: no test writes there
    bad.write_text("def f(x):\n    MemoryFact.objects.filter(pk=1).delete()\n")
    assert _offences(bad, root=tmp_path)
    bad.write_text(
        "from memoryadmin.facts.tables import MEMORY_FACT\n"
        "SQL = f'DELETE FROM {MEMORY_FACT} WHERE id = %s'\n"
    )
    assert _offences(bad, root=tmp_path)
    bad.write_text(
        "from memoryadmin.facts import sql\n"
        "def f(cursor):\n    cursor.execute(sql.SQL_UPDATE_FACTS, [])\n"
    )
    assert _offences(bad, root=tmp_path)
    bad.write_text(
        "from memoryadmin.facts.tables import MEMORY_FACT\n"
        "SQL = f'UPDATE j SET n = 1 FROM {MEMORY_FACT} f WHERE f.id = j.id'\n"
    )
    # reading memory_fact in a write to another table is fine
    assert not _offences(bad, root=tmp_path)
