"""The RST parser interface and the parser registry.

Parsers register a factory under a name (spaCy-style registries), so the CLI,
the index builder and the API pick one by name: ``get_parser("rules")``.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from parsers.errors import ConfigError
from parsers.tree import DiscourseTree

_FACTORIES: dict[str, Callable[..., RSTParser]] = {}
#: The parser used when none is named; ``DTDIALOG_PARSER`` overrides it.
DEFAULT_PARSER = "rules"


class RSTParser(ABC):
    """Text -> ``DiscourseTree``."""

    name: str = "base"

    @abstractmethod
    def parse(self, text: str) -> DiscourseTree:
        """Return the discourse tree of ``text``. Raises ``InputError`` for unusable text."""

    def parse_many(self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1) -> Iterator[DiscourseTree]:
        """Yield the trees of ``texts`` in order. Parsers override this to batch their NLP."""
        for text in texts:
            yield self.parse(text)

    def to_dict(self) -> dict[str, Any]:
        """Return the configuration that ``get_parser(**config)`` rebuilds this parser from."""
        return {"name": self.name}


def register_parser(name: str) -> Callable[[Callable[..., RSTParser]], Callable[..., RSTParser]]:
    """Return a decorator that registers a parser factory under ``name``."""

    def deco(factory: Callable[..., RSTParser]) -> Callable[..., RSTParser]:
        _FACTORIES[name] = factory
        return factory

    return deco


def _load_builtin_parsers() -> None:
    # Imported for their @register_parser side effect; kept lazy so importing
    # parsers.base never pulls spaCy in.
    import importlib

    for module in ("parsers.rule_parser", "parsers.isanlp_adapter", "parsers.trained_parser"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


def available_parsers() -> list[str]:
    """Return the registered parser names."""
    _load_builtin_parsers()
    return sorted(_FACTORIES)


def default_parser_name() -> str:
    """Return the parser name to use when none is given (``DTDIALOG_PARSER`` or the built-in default)."""
    return os.environ.get("DTDIALOG_PARSER", DEFAULT_PARSER)


def get_parser(name: str | None = None, **config: Any) -> RSTParser:
    """Return a new parser built by the factory registered under ``name`` (default: ``default_parser_name()``).

    Raises ``ConfigError`` for an unknown name.
    """
    _load_builtin_parsers()
    key = name or default_parser_name()
    if key not in _FACTORIES:
        raise ConfigError(f"unknown parser {key!r}; available: {', '.join(sorted(_FACTORIES)) or 'none'}")
    return _FACTORIES[key](**config)
