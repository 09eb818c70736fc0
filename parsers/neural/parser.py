"""The ``neural`` parser: spaCy words and sentences, frozen MiniLM word vectors, numpy heads.

``get_parser("neural")`` loads ``parsers/models/gum-neural-v2``. Without onnxruntime, tokenizers, the shipped
int8 MiniLM or the model files, building it raises a one-line ``ModelNotAvailableError``; no torch is needed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from parsers.base import DEFAULT_NEURAL_MODEL, RSTParser, register_parser
from parsers.errors import ConfigError, InputError, ModelNotAvailableError
from parsers.nlp_base import AnalyzedText, NLPBackend
from parsers.tree import DiscourseTree


def neural_model_dir(model: str | Path) -> Path:
    """Return the folder of ``model``: a model name under ``parsers/models`` or ``data_home()/models``, or a path.

    Raises ``ConfigError`` for a name that exists nowhere.
    """
    from parsers.home import data_home
    from parsers.minilm_file import MODELS_DIR

    homes = (MODELS_DIR, data_home() / "models")
    for home in homes:
        if (home / str(model)).is_dir():
            return home / str(model)
    if Path(model).is_dir():
        return Path(model)
    known = sorted({p.name for home in homes if home.is_dir() for p in home.iterdir() if p.is_dir()})
    raise ConfigError(f"unknown neural parser model {str(model)!r}; known: {', '.join(known) or 'none'}")


@register_parser("neural")
class NeuralParser(RSTParser):
    """RST parser over frozen MiniLM word vectors with the heads trained by ``parsers.neural.training``."""

    name = "neural"

    def __init__(self, *, model: str = DEFAULT_NEURAL_MODEL, nlp: NLPBackend | None = None) -> None:
        if not isinstance(model, (str, Path)) or not str(model):
            raise ConfigError(f"model must be a model name or directory, got {model!r}")
        from parsers.neural.encoder import MiniLMWordEncoder, encoder_id
        from parsers.neural.model import NeuralModel

        started = time.perf_counter()
        self.model_name = str(model)
        self.model = NeuralModel.from_disk(neural_model_dir(model))
        trained_on = self.model.manifest.get("encoder", {}).get("id")
        if trained_on != encoder_id():
            # heads read the vectors of one encoder: another one's would give confident nonsense
            raise ModelNotAvailableError(f"the neural model {self.model_name!r} was trained on encoder {trained_on!r}, "
                                         f"not the shipped {encoder_id()!r}: retrain it (python -m parsers.train --parser neural)")
        self.encoder = MiniLMWordEncoder()
        if nlp is None:
            from parsers.nlp_spacy import SpacyBackend

            nlp = SpacyBackend(disable=("ner",))
        self.nlp = nlp
        self.load_seconds = time.perf_counter() - started

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_name}

    def parse(self, text: str) -> DiscourseTree:
        return next(self.parse_many([text]))

    def parse_many(self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1) -> Iterator[DiscourseTree]:
        """Yield the trees of ``texts``; spaCy and MiniLM each run once per batch of ``batch_size`` texts."""
        from parsers.text_input import clean_text

        batch: list[str] = []
        for text in texts:
            batch.append(clean_text(text))
            if len(batch) >= batch_size:
                yield from self._parse_batch(batch, None, n_process)
                batch = []
        if batch:
            yield from self._parse_batch(batch, None, n_process)

    def parse_segmented(self, text: str, edu_starts: Sequence[int]) -> DiscourseTree:
        """Return the tree of ``text`` over given EDUs (character offsets where each EDU starts).

        The text is used as given (not cleaned), so the offsets stay valid. Raises ``InputError`` for an
        empty text or offsets outside it.
        """
        if not isinstance(text, str) or not text.strip():
            raise InputError("text has no words to parse")
        if not edu_starts or any(not isinstance(s, int) or not 0 <= s < len(text) for s in edu_starts):
            raise InputError("EDU start offsets must be a non-empty list of positions inside the text")
        return next(self._parse_batch([text], [list(edu_starts)], 1))

    def _parse_batch(self, texts: list[str], starts: list[list[int]] | None, n_process: int) -> Iterator[DiscourseTree]:
        from threadpoolctl import threadpool_limits

        analyses = list(self.nlp.analyze_many(texts, batch_size=max(len(texts), 1), n_process=n_process))
        for a in analyses:
            if not a.tokens:
                raise InputError("text has no words to parse")
        vectors = self.encoder.encode([[t.text for t in a.tokens] for a in analyses])
        # The heads' matrices are small: OpenBLAS threads would only fight each other (and torch) over the cores.
        with threadpool_limits(limits=1, user_api="blas"):
            trees = [self._tree(analyzed, words, starts[k] if starts is not None else None)
                     for k, (analyzed, words) in enumerate(zip(analyses, vectors))]
        yield from trees

    def _tree(self, analyzed: AnalyzedText, words, edu_starts: list[int] | None) -> DiscourseTree:
        from dataclasses import replace

        from parsers.edu_content import enrich_edus
        from parsers.neural.pipeline import parse_analyzed

        tree, views = parse_analyzed(self.model, analyzed, words, edu_starts=edu_starts, parser=self.name)
        edus = tuple(enrich_edus(analyzed, views, list(tree.edus)))
        return replace(tree, edus=edus, meta={"model": self.model_name})
