"""Registry of dialogue-reconstruction methods: ``get_method(name, **options)``.

Methods are imported lazily ("module:Class" entries), so an optional dependency of one method
never breaks the others. A new method is one ``register_method`` call (or one entry below).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from eval.methods.base import MethodUnavailable, RankingMethod
from parsers.errors import InputError

# name -> "module:attribute" of a RankingMethod factory, or the factory itself.
_REGISTRY: dict[str, str | Callable[..., RankingMethod]] = {
    "keyword": "eval.methods.keyword:KeywordMethod",
    "syntactic": "eval.methods.syntactic:SyntacticMethod",
    "dtq": "eval.methods.dtq:DTQMethod",
    "dense": "eval.methods.dense:DenseMethod",
    "dtq-rules": "eval.methods.dtq:dtq_rules",
    "dtq-nocontext": "eval.methods.dtq:dtq_without_context",
    "dtq-no-dt": "eval.methods.dtq:dtq_without_tree",
    "dtq-rules-no-dt": "eval.methods.dtq:dtq_rules_without_tree",
    "hybrid": "eval.methods.hybrid:hybrid_method",
    "hybrid+dt": "eval.methods.hybrid:hybrid_dt_method",
}


def register_method(name: str, factory: str | Callable[..., RankingMethod]) -> None:
    """Register ``factory`` (a callable or a ``"module:attribute"`` string) under ``name``."""
    _REGISTRY[name] = factory


def available_methods() -> list[str]:
    """Return the registered method names, in registration order."""
    return list(_REGISTRY)


def get_method(name: str, **options) -> RankingMethod:
    """Return a new instance of the method ``name`` built with ``options``.

    Raises ``InputError`` for an unknown name and ``MethodUnavailable`` when the method cannot run here.
    """
    if name not in _REGISTRY:
        raise InputError(f"unknown method {name!r}; choose from {', '.join(_REGISTRY)}")
    factory = _REGISTRY[name]
    if isinstance(factory, str):
        module_name, attr = factory.split(":")
        factory = getattr(importlib.import_module(module_name), attr)
    return factory(**options)


__all__ = ["MethodUnavailable", "RankingMethod", "available_methods", "get_method", "register_method"]
