"""The RST parser interface and the parser registry.

Parsers register a factory under a name (spaCy-style registries), so the CLI,
the index builder and the API pick one by name: ``get_parser("rules")``.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from parsers.errors import ConfigError
from parsers.tree import DiscourseTree

_FACTORIES: dict[str, Callable[..., RSTParser]] = {}
#: The parser of ``dtdialog parse``, ``POST /parse``, the engine and its indexes when none is named;
#: ``$DTDIALOG_PARSER`` overrides it for all of them. ``rules``, although ``neural`` scores higher on GUM: the
#: shipped ranker (``ranker-v1``) was fitted on rules trees, with neural trees retrained its DT features add
#: nothing or cost P@1 (docs/parsers.md), and a neural parse costs the index build and every turn a MiniLM pass.
DEFAULT_PARSER = "rules"
#: The neural parser's registry name and its shipped model folder under ``parsers/models``.
NEURAL_PARSER = "neural"
DEFAULT_NEURAL_MODEL = "gum-neural-v2"


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

    for module in ("parsers.rule_parser", "parsers.isanlp_adapter", "parsers.neural.parser"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


def available_parsers() -> list[str]:
    """Return the registered parser names."""
    _load_builtin_parsers()
    return sorted(_FACTORIES)


def neural_ready(model_dir: Path | None = None) -> bool:
    """Return True when the neural parser can run here: onnxruntime, tokenizers, the shipped int8 MiniLM, its
    model files, and heads trained on that encoder. Reads one small JSON file and imports nothing heavy."""
    from parsers.neural.encoder import encoder_available, encoder_id
    from parsers.neural.model import MANIFEST_FILE, WEIGHTS_FILE

    folder = model_dir or Path(__file__).resolve().parent / "models" / DEFAULT_NEURAL_MODEL
    if not (encoder_available() and (folder / WEIGHTS_FILE).is_file() and (folder / MANIFEST_FILE).is_file()):
        return False
    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
        return manifest["encoder"]["id"] == encoder_id()  # heads of another encoder: NeuralParser refuses them
    except (OSError, ValueError, KeyError, TypeError):
        return False


def default_parser_name(name: str | None = None) -> str:
    """Return ``name``, else ``$DTDIALOG_PARSER``, else ``DEFAULT_PARSER``: the one rule for every caller."""
    return name or os.environ.get("DTDIALOG_PARSER") or DEFAULT_PARSER


def get_parser(name: str | None = None, **config: Any) -> RSTParser:
    """Return a new parser built by the factory registered under ``name`` (default: ``default_parser_name()``).

    Raises ``ConfigError`` for an unknown name.
    """
    _load_builtin_parsers()
    key = default_parser_name(name)
    if key not in _FACTORIES:
        raise ConfigError(f"unknown parser {key!r}; available: {', '.join(sorted(_FACTORIES)) or 'none'}")
    return _FACTORIES[key](**config)
