"""The client is its own distribution: installed alone into a fresh virtualenv (no Django
there), it talks to a live server of this project over HTTP and through its MCP server.

Slow (a virtualenv and a pip install, about a minute with pip's cache), hence the mark; it
runs in `make test` like every other test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

from memoryadmin.facts.models import ActorKind, FactEvent, MemoryFact

from .conftest import TOKEN_NAME

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("installed_client_probe.py")
SUBJECT = "t-dist"

pytestmark = pytest.mark.slow


def isolated_env(**extra: str) -> dict[str, str]:
    """This process's environment without anything that would point at the server's code or
    its virtualenv."""
    dropped = {"PYTHONPATH", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV", "PYTHONHOME"}
    env = {name: value for name, value in os.environ.items() if name not in dropped}
    return {**env, **extra}


def run(args: list[str], cwd: Path, timeout: float, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        args,
        cwd=cwd,
        env=isolated_env(**extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_client_installs_alone_and_talks_to_a_live_server(live_server, api_token, tmp_path):
    home = tmp_path / "agent-host"
    venv.EnvBuilder(with_pip=True).create(home)
    python = str(home / "bin" / "python")
    # A copy to build from: pip builds a source directory in place (build/, *.egg-info), and no
    # test writes into the source tree.
    source = shutil.copytree(
        ROOT / "client",
        tmp_path / "client-source",
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"),
    )
    done = run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"{source}[mcp]",
        ],
        tmp_path,
        300,
    )
    assert done.returncode == 0, done.stderr

    no_django = run([python, "-c", "import django"], tmp_path, 60)
    assert no_django.returncode != 0
    assert "No module named 'django'" in no_django.stderr

    done = run(
        [python, str(PROBE), live_server.url, SUBJECT],
        tmp_path,
        120,
        MEMORYADMIN_TOKEN=api_token,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)

    assert Path(seen["package"]).is_relative_to(home)  # the installed copy, not the source
    assert seen["skill"] == "---"
    assert seen["store"] == {
        "tier_one": ["overnight_flights", "seat_preference"],
        "deleted": [True, False],
        "left": ["seat_preference"],
    }
    assert seen["mcp"]["tools"] == ["recall_memories", "save_memory", "saved_memory"]
    assert seen["mcp"]["save"] == ["Saved: meal."]
    assert "Vegetarian" in seen["mcp"]["recall"][0]

    assert set(MemoryFact.objects.filter(subject_id=SUBJECT).values_list("key", flat=True)) == {
        "seat_preference",
        "meal",
    }
    event = FactEvent.objects.filter(subject_id=SUBJECT, key="meal").get()
    assert (event.actor_kind, event.actor_label) == (ActorKind.AGENT, f"token:{TOKEN_NAME}")
