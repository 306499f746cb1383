"""The old import path, memoryadmin.client, is the client package under another name: the same
objects, so an isinstance check or an enum comparison across the two paths holds."""

from __future__ import annotations

import importlib

import pytest

import memoryadmin.client
import memoryadmin_client

SUBMODULES = ("types", "text", "errors", "http", "tools", "prompt", "mcp")


def test_package_reexports_every_public_name_as_the_same_object():
    assert memoryadmin.client.__all__ == memoryadmin_client.__all__
    for name in memoryadmin_client.__all__:
        assert getattr(memoryadmin.client, name) is getattr(memoryadmin_client, name), name


@pytest.mark.parametrize("submodule", SUBMODULES)
def test_submodule_reexports_the_same_objects(submodule):
    old = importlib.import_module(f"memoryadmin.client.{submodule}")
    new = importlib.import_module(f"memoryadmin_client.{submodule}")
    assert old.__all__
    for name in old.__all__:
        assert getattr(old, name) is getattr(new, name), f"{submodule}.{name}"


def test_the_server_sees_the_client_types():
    from memoryadmin.client.types import MemoryCategory
    from memoryadmin_client.types import MemoryCategory as NewCategory

    assert MemoryCategory is NewCategory
