"""bench/run.py stays a thin command line over bench/scenarios/: it imports, and its flags are
the documented ones (the bench itself is run by hand, never by the tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_command_line_imports_every_scenario_and_keeps_its_flags() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "run.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for flag in ("--preset", "--n", "--load-seconds", "--skip-load", "--load-if-needed", "--only"):
        assert flag in done.stdout
