"""SKILL.md: the airline memory skill shipped with the client package."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from memoryadmin_client import skill_text

ROOT = Path(__file__).resolve().parents[2]


def test_skill_has_frontmatter_an_agent_runtime_can_load():
    text = skill_text()
    head, _, body = text.removeprefix("---\n").partition("\n---\n")
    meta = dict(line.split(": ", 1) for line in head.splitlines())
    assert meta["name"] == "traveller-memory"
    assert "save_memory" in meta["description"] and len(meta["description"]) < 1024
    assert body.strip()


def test_skill_covers_the_rules_the_agent_must_follow():
    text = skill_text().lower()
    for rule in (
        "today",  # today's explicit request wins over a saved default
        "saved_memory",  # don't recall what the injected profile already shows
        "recall_memories",
        "same turn",  # save right away, with a short confirmation
        "same key",  # reuse keys to replace
        "one fact per key",
        "passport",
        "loyalty",
        "booking",
        "card",
        "e-mail",
        "phone",
        "health",
        "in so many words",  # ...unless the traveller explicitly asked
    ):
        assert rule in text, rule


def _build(source: Path, out: Path) -> None:
    """What an install does with a source tree, up to the files it would copy."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import setuptools; setuptools.setup()",
            "-q",
            "build_py",
            "--build-lib",
            str(out),
        ],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def _copy_tree(source: Path, target: Path, files: tuple[str, ...], dirs: tuple[str, ...]) -> None:
    target.mkdir()
    for name in files:
        shutil.copy(source / name, target)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in dirs:
        if (source / name).is_dir():
            shutil.copytree(source / name, target / name, ignore=ignore)


def test_skill_is_installed_with_the_package(tmp_path):
    """Build the client distribution the way an install does and look for SKILL.md in the
    result: a data file is only shipped if the build configuration names it."""
    source = tmp_path / "src"
    _copy_tree(ROOT / "client", source, ("pyproject.toml", "README.md"), ("memoryadmin_client",))
    out = tmp_path / "build"
    _build(source, out)
    assert (out / "memoryadmin_client" / "http.py").is_file()
    assert (out / "memoryadmin_client" / "SKILL.md").is_file(), (
        "client/pyproject.toml needs [tool.setuptools.package-data] memoryadmin_client = "
        '["SKILL.md"]'
    )


def test_server_distribution_does_not_ship_the_client(tmp_path):
    """The server's build takes memoryadmin and leaves client/ to its own distribution (the
    old-path shim, memoryadmin/client/, is gone)."""
    source = tmp_path / "src"
    _copy_tree(ROOT, source, ("pyproject.toml",), ("memoryadmin", "client"))
    out = tmp_path / "build"
    _build(source, out)
    assert (out / "memoryadmin" / "facts" / "store.py").is_file()
    assert not (out / "memoryadmin" / "client").exists()
    assert sorted(path.name for path in out.iterdir()) == ["memoryadmin"]
