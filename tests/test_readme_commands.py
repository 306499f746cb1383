"""The README's commands work as printed: each ```sh block marked `<!-- run-in-test -->` runs, as
a fresh clone would run it (no SECRET_KEY, no DEBUG in the environment), on a scratch database
holding the demo, and exits 0. `make` targets take DATABASE_URL from the environment in place of
the embedded PostgreSQL (the Makefile says so), which is the one difference."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.demo import free_url
from tests.support.scratchdb import scratch_database

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- run-in-test -->"
BLOCK = re.compile(re.escape(MARKER) + r"\s*```sh\n(.*?)```", re.S)


def marked_blocks(text: str) -> list[str]:
    return BLOCK.findall(text)


def test_the_marker_finds_the_blocks_it_should():
    readme = (ROOT / "README.md").read_text()
    blocks = marked_blocks(readme)
    assert len(blocks) == readme.count(MARKER) >= 2  # every marker is right before a sh block
    assert any("make portal-link" in block for block in blocks)
    assert any("create_service_token" in block for block in blocks)


def _env(database_url: str, home: Path) -> dict[str, str]:
    drop = {"SECRET_KEY", "DEBUG", "DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"}
    env = {name: value for name, value in os.environ.items() if name not in drop}
    env.update(DATABASE_URL=database_url, HOME=str(home), MAKEFLAGS="")
    return env


def test_every_marked_readme_command_runs_as_printed(tmp_path):
    blocks = marked_blocks((ROOT / "README.md").read_text())
    with scratch_database() as database_url:
        env = _env(database_url, tmp_path)
        prepare = subprocess.run(  # noqa: S603 - fixed argv: the demo, as `make run` loads it
            [
                "sh",
                "-c",
                f"{sys.executable} manage.py migrate --noinput -v 0 && "
                f"{sys.executable} manage.py seed_demo --base-url {free_url()}",
            ],
            cwd=ROOT,
            env={**env, "DEBUG": "true"},
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert prepare.returncode == 0, prepare.stderr[-2000:]
        printed = []
        for block in blocks:
            result = subprocess.run(  # noqa: S603 - the README's own block
                ["sh", "-e", "-c", block],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert result.returncode == 0, (
                f"{block}\n{result.stdout[-1000:]}{result.stderr[-2000:]}"
            )
            printed.append(result.stdout)
    # `make portal-link RUN_PORT=8765` prints a link on that port
    assert "http://127.0.0.1:8765/portal/open/" in "".join(printed)
