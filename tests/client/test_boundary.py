"""The client is what an agent host installs next to its own code: it must not need Django."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = ROOT / "memoryadmin" / "client"
SERVER_SIDE = ("django", "rest_framework", "celery", "memoryadmin.")


@pytest.mark.parametrize(
    "module", ["memoryadmin.client.http", "memoryadmin.client.tools", "memoryadmin.client.mcp"]
)
def test_client_module_imports_without_django(module):
    code = (
        "import json, sys\n"
        f"import {module}\n"
        "loaded = [m for m in sys.modules if m in ('django', 'celery')\n"
        "          or m.startswith(('django.', 'memoryadmin.facts', 'memoryadmin.api',\n"
        "                           'memoryadmin.extraction', 'memoryadmin.staff'))]\n"
        "print(json.dumps(sorted(loaded)))\n"
    )
    env = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [], f"{module} pulls in server-side modules"


def test_client_sources_import_nothing_server_side():
    """Static check, so a lazy import inside a function cannot sneak Django in either."""
    offenders = []
    for path in sorted(CLIENT_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                if name.startswith(SERVER_SIDE) and not name.startswith("memoryadmin.client"):
                    offenders.append(f"{path.name}: {name}")
    assert offenders == []
