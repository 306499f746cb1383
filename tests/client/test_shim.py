"""The old import path, memoryadmin.client, is the client package under another name: the same
objects, so an isinstance check or an enum comparison across the two paths holds. It is
deprecated: importing it warns, naming the new path, at the importer's line."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

import pytest

import memoryadmin
import memoryadmin_client

PACKAGE = "memoryadmin.client"
SUBMODULES = ("types", "text", "errors", "http", "tools", "prompt", "mcp")


@pytest.fixture
def unimported(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the old path for this test (put back after it), so importing it is a first import
    again and warns again: Python runs a module, and so warns, once per process."""
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(memoryadmin, "client", raising=False)


def import_old(name: str) -> ModuleType:
    with pytest.warns(DeprecationWarning, match=r"memoryadmin\.client is deprecated") as caught:
        module = importlib.import_module(name)
    assert any("import memoryadmin_client instead" in str(w.message) for w in caught)
    return module


def test_importing_the_old_path_warns_at_the_importers_line(unimported):
    with pytest.warns(DeprecationWarning, match="import memoryadmin_client instead") as caught:
        import memoryadmin.client  # noqa: F401
    (warning,) = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert warning.filename == __file__  # not the shim's own file, nor the import system's


def test_package_reexports_every_public_name_as_the_same_object(unimported):
    old = import_old(PACKAGE)
    assert old.__all__ == memoryadmin_client.__all__
    for name in memoryadmin_client.__all__:
        assert getattr(old, name) is getattr(memoryadmin_client, name), name


@pytest.mark.parametrize("submodule", SUBMODULES)
def test_submodule_reexports_the_same_objects(unimported, submodule):
    old = import_old(f"{PACKAGE}.{submodule}")  # importing a submodule imports the package
    new = importlib.import_module(f"memoryadmin_client.{submodule}")
    assert old.__all__
    for name in old.__all__:
        assert getattr(old, name) is getattr(new, name), f"{submodule}.{name}"


def test_the_server_sees_the_client_types(unimported):
    with pytest.warns(DeprecationWarning, match="memoryadmin_client"):
        from memoryadmin.client.types import MemoryCategory
    from memoryadmin_client.types import MemoryCategory as NewCategory

    assert MemoryCategory is NewCategory
