"""FASTPATH_PYDANTIC_MODELS: pydantic models built from trusted rows by setting the instance's
slots by hand, skipping both validation and `model_construct` (a third of an agent read's
Python time in the in-process store).

Written against pydantic 2.x (2.14): a BaseModel instance is its `__dict__` (the field values)
plus three private slots, `__pydantic_fields_set__`, `__pydantic_extra__` and
`__pydantic_private__`, which is what `model_construct` fills in for a model without extras,
private attributes or defaults to apply. The trick checks, once per model class, that BaseModel
still has exactly those slots and that the model has no private attributes or extras.

Safe fallback (the setting off, or the check failing): pydantic's public `model_construct`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

from . import broken, enabled, fits

SETTING = "FASTPATH_PYDANTIC_MODELS"
_SLOTS = frozenset(
    {"__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"}
)

M = TypeVar("M", bound=BaseModel)

_new_object = object.__new__
_set = object.__setattr__
_fitting: dict[type, frozenset[str]] = {}  # model -> its field names, once checked


def construct_all(model: type[M], values: Iterable[dict[str, Any]]) -> list[M]:
    """Instances of `model` holding `values` (one dict of every field per instance, taken over
    as the instance's own), not validated: the values must already be what the fields hold
    (e.g. rows of our own table)."""
    fields = _fitting.get(model) if enabled(SETTING) else None
    if fields is None and enabled(SETTING):
        fields = _check(model)
    if fields is None:
        return [model.model_construct(**value) for value in values]
    built = []
    for value in values:
        instance = _new_object(model)
        _set(instance, "__dict__", value)
        _set(instance, "__pydantic_fields_set__", set(fields))
        _set(instance, "__pydantic_extra__", None)
        _set(instance, "__pydantic_private__", None)
        built.append(instance)
    return built


def _check(model: type[BaseModel]) -> frozenset[str] | None:
    if not fits(SETTING, "pydantic", 2):
        return None
    if frozenset(getattr(BaseModel, "__slots__", ())) != _SLOTS:
        broken(SETTING, "pydantic's BaseModel no longer has the slots the trick sets")
        return None
    if model.__private_attributes__ or model.model_config.get("extra") == "allow":
        broken(SETTING, f"{model.__name__} has private attributes or extras")
        return None
    fields = frozenset(model.model_fields)
    _fitting[model] = fields
    return fields
