"""FASTPATH_PYDANTIC_CONSTRUCT: rows of our own tables, already valid, built into a frozen
pydantic model by filling its instance slots, as `BaseModel.model_construct` does, without its
per-field walk (aliases, defaults, the fields-set bookkeeping): about a fifth of the cost, ~0.6
against ~2.8 µs a fact (bench/RESULTS.md, "The agent's reads at the floor").

Written against pydantic 2.x. The private names are BaseModel's instance slots
`__pydantic_fields_set__`, `__pydantic_extra__` and `__pydantic_private__`, set with
`object.__setattr__` beside the instance `__dict__`, which is what `model_construct` does with
them. It fits a model only when the caller names every field, the model keeps no extra fields,
no private attributes and no `model_post_init` (then `model_construct` does more than this).

Safe fallback (the setting off, pydantic not 2.x, a slot gone, or a model it does not fit):
`model.model_construct(**values)`, pydantic's public API; the same instances.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from . import broken, enabled, fits

SETTING = "FASTPATH_PYDANTIC_CONSTRUCT"
_SLOTS = ("__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")


def builder(model: type, fields: Iterable[str]) -> Callable[[dict[str, Any]], Any]:
    """A function from a dict of every one of `fields` to an instance of `model`, unvalidated
    (the caller's rows are already valid): the fast one while the trick is on and fits, else
    pydantic's `model_construct`. Read on every call, so a test can flip the setting."""
    if enabled(SETTING):
        fast = _fast_builder(model, tuple(fields))
        if fast is not None:
            return fast
    return lambda values: model.model_construct(**values)


@functools.cache
def _fast_builder(model: type, fields: tuple[str, ...]) -> Callable[[dict[str, Any]], Any] | None:
    from pydantic import BaseModel

    if not fits(SETTING, "pydantic", 2, *((BaseModel, slot) for slot in _SLOTS)):
        return None
    if (
        set(fields) != set(model.model_fields)
        or model.model_config.get("extra") == "allow"
        or model.__private_attributes__
        or model.__pydantic_post_init__ is not None
    ):
        broken(SETTING, f"{model.__name__} is not a model the trick was written for")
        return None
    new = object.__new__
    setattr_ = object.__setattr__
    names = frozenset(fields)

    def build(values: dict[str, Any]) -> Any:
        instance = new(model)
        setattr_(instance, "__dict__", values)
        setattr_(instance, "__pydantic_fields_set__", set(names))
        setattr_(instance, "__pydantic_extra__", None)
        setattr_(instance, "__pydantic_private__", None)
        return instance

    return build
