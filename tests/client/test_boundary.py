"""The client is what an agent host installs next to its own code: it must not need Django."""

from __future__ import annotations

import ast
import json
import os
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = ROOT / "client" / "memoryadmin_client"
SERVER_SIDE = ("django", "rest_framework", "celery", "memoryadmin")


@pytest.mark.parametrize(
    "module", ["memoryadmin_client.http", "memoryadmin_client.tools", "memoryadmin_client.mcp"]
)
def test_client_module_imports_without_django(module):
    code = (
        "import json, sys\n"
        f"import {module}\n"
        "loaded = [m for m in sys.modules if m in ('django', 'celery', 'memoryadmin')\n"
        "          or m.startswith(('django.', 'celery.', 'memoryadmin.'))]\n"
        "print(json.dumps(sorted(loaded)))\n"
    )
    env = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [], f"{module} pulls in server-side modules"


def test_client_sources_import_nothing_server_side():
    """Static check, so a lazy import inside a function cannot sneak Django in either."""
    offenders = []
    assert sorted(CLIENT_DIR.glob("*.py")), CLIENT_DIR
    for path in sorted(CLIENT_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in SERVER_SIDE:  # the server package itself included
                    offenders.append(f"{path.name}: {name}")
    assert offenders == []


def _local_imports(path: Path) -> tuple[set[str], list[str]]:
    """The sibling modules a client module imports at its top level, and any import made
    inside a function or class (which could only be hiding a cycle)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            top.update([node.module] if node.module else [a.name for a in node.names])
    nested = [
        f"{path.name}:{node.lineno}"
        for outer in tree.body
        if not isinstance(outer, ast.Import | ast.ImportFrom)
        for node in ast.walk(outer)
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    return top, nested


def test_client_modules_import_one_another_without_a_cycle():
    graph, hidden = {}, []
    for path in sorted(CLIENT_DIR.glob("*.py")):
        graph[path.stem], nested = _local_imports(path)
        hidden += nested
    assert hidden == [], "imports inside functions"
    done: set[str] = set()

    def visit(module: str, trail: tuple[str, ...]) -> None:
        assert module not in trail, " -> ".join((*trail, module))
        if module not in done:
            for imported in graph.get(module, ()):
                visit(imported, (*trail, module))
            done.add(module)

    for module in graph:
        visit(module, ())


def test_every_server_module_is_forbidden_the_test_doubles():
    """The import-linter contract lists the server's top-level modules one by one (all of
    memoryadmin but the forbidden package): a module added later must join the list."""
    import memoryadmin

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (forbidden,) = [
        c
        for c in contracts["contracts"]
        if c["type"] == "forbidden" and c["forbidden_modules"] == ["memoryadmin.testing"]
    ]
    assert forbidden["forbidden_modules"] == ["memoryadmin.testing"]
    children = {f"memoryadmin.{m.name}" for m in pkgutil.iter_modules(memoryadmin.__path__)}
    assert set(forbidden["source_modules"]) == children - set(forbidden["forbidden_modules"])
