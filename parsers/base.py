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
#: The parser used when none is named and the neural one is not ready; ``DTDIALOG_PARSER`` overrides it.
DEFAULT_PARSER = "rules"
#: The parser that is the default whenever it is installed and its manifest shows it beat the rules on GUM.
#: The answer engine does not follow this default: it reads the trees of the parser its ranker was trained
#: with (``dtdialog.assembly.engine_parser_name``).
NEURAL_PARSER = "neural"
#: The neural parser's shipped model folder under ``parsers/models``.
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

    for module in ("parsers.rule_parser", "parsers.isanlp_adapter", "parsers.trained_parser", "parsers.neural.parser"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


def available_parsers() -> list[str]:
    """Return the registered parser names."""
    _load_builtin_parsers()
    return sorted(_FACTORIES)


def neural_default_ready(model_dir: Path | None = None) -> bool:
    """Return True when the neural parser can run (onnxruntime, tokenizers, the shipped int8 MiniLM, its model
    files, heads trained on that encoder) and its manifest records GUM test scores above the rules parser's on
    every figure the manifest holds.

    Reads one small JSON file and imports nothing heavy (``find_spec`` only).
    """
    from parsers.neural.encoder import encoder_available, encoder_id
    from parsers.neural.model import MANIFEST_FILE, WEIGHTS_FILE

    folder = model_dir or Path(__file__).resolve().parent / "models" / DEFAULT_NEURAL_MODEL
    if not (encoder_available() and (folder / WEIGHTS_FILE).is_file() and (folder / MANIFEST_FILE).is_file()):
        return False
    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
        if manifest["encoder"]["id"] != encoder_id():
            return False  # heads of another encoder: NeuralParser refuses them
        test, rules = manifest["scores"]["test"], manifest["rules_gum_test"]
        keys = [k for k in ("seg_f1", "span_f1", "nuc_f1", "rel_f1", "full_f1") if k in rules]
        return bool(keys) and all(float(test[k]) > float(rules[k]) for k in keys)
    except (OSError, ValueError, KeyError, TypeError):
        return False  # a damaged manifest is no evidence: keep the rules


def default_parser_name() -> str:
    """Return the parser name to use when none is given: ``DTDIALOG_PARSER``, else ``neural`` when
    ``neural_default_ready()``, else ``rules``."""
    if "DTDIALOG_PARSER" in os.environ:
        return os.environ["DTDIALOG_PARSER"]
    return NEURAL_PARSER if neural_default_ready() else DEFAULT_PARSER


def get_parser(name: str | None = None, **config: Any) -> RSTParser:
    """Return a new parser built by the factory registered under ``name`` (default: ``default_parser_name()``).

    Raises ``ConfigError`` for an unknown name.
    """
    _load_builtin_parsers()
    key = name or default_parser_name()
    if key not in _FACTORIES:
        raise ConfigError(f"unknown parser {key!r}; available: {', '.join(sorted(_FACTORIES)) or 'none'}")
    return _FACTORIES[key](**config)
