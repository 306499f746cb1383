"""Only the facts/services/ package may change MemoryFact rows: the audit trail depends on it.

Two checks: tests/conftest.py fails any test whose SQL writes memory_fact from a call stack that
does not pass through facts/services/ (demonstrated below), and a static scan catches code that no
test happens to run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.db import transaction
from django.utils import timezone

from memoryadmin.facts.models import MemoryFact, Subject
from tests.conftest import ForeignFactWrite
from tests.factories import FactFactory

ROOT = Path(__file__).resolve().parents[2]
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


def _offences(path: Path) -> list[str]:
    """Lines that call a mutating method on something that names MemoryFact or `.facts`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
        is_mutator_call = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
        )
        if is_mutator_call:
            target = ast.unparse(node.func.value)
            if "MemoryFact" in target or target.endswith(".facts") or "memory_fact" in target:
                found.append(f"{where}: {ast.unparse(node)[:80]}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.upper()
            names_table = '"MEMORY_FACT"' in text or "MEMORY_FACT " in text
            if names_table and any(verb in text for verb in ("INSERT", "UPDATE", "DELETE")):
                found.append(f"{where}: raw SQL on memory_fact")
    return found


def test_no_module_outside_services_mutates_memory_facts():
    # erasure.py is the one erasure path; only services call it (the runtime guard checks that
    # every write to memory_fact passes through facts/services/).
    allowed = {
        *(ROOT / "memoryadmin" / "facts" / "services").rglob("*.py"),
        ROOT / "memoryadmin" / "facts" / "erasure.py",
    }
    sources = [
        path
        for path in (ROOT / "memoryadmin").rglob("*.py")
        if path not in allowed and "migrations" not in path.parts
    ]
    assert sources, "the scan found no code to check"
    offences = [line for path in sources for line in _offences(path)]
    assert offences == []


def test_the_static_scan_notices_an_offence(tmp_path):
    bad = ROOT / "memoryadmin" / "_scan_probe_tmp.py"
    bad.write_text("def f(x):\n    MemoryFact.objects.filter(pk=1).delete()\n")
    try:
        assert _offences(bad)
    finally:
        bad.unlink()
