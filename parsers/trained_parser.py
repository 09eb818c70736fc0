"""The trained discourse parser: scikit-learn models learned from GUM (see ``parsers.train``).

Pipeline: ``clean_text`` -> spaCy analysis -> EDU segmentation (token-boundary
classifier) -> greedy bottom-up tree building (a structure scorer per level,
sentences first, then across sentences) -> relation+nuclearity labelling.

A model is a folder (``model.joblib`` plus a ``manifest.json``). ``get_parser("trained")`` loads
``DEFAULT_MODEL`` from ``parsers/models/`` or ``$DTDIALOG_HOME/models/``. It is no longer shipped: it never beat
the rules parser on GUM (docs/trained_parser.md), and its 10.3 MB did not fit the models' 30 MB budget beside
the neural parser's; ``python -m parsers.train`` makes it again (``TRAIN_HINT``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parsers.base import RSTParser, register_parser
from parsers.edu_content import enrich_edus
from parsers.errors import ConfigError, InputError, ModelNotAvailableError
from parsers.features import (
    DocContext,
    EduView,
    all_boundary_features,
    edus_from_labels,
    pair_features,
)
from parsers.nlp_base import AnalyzedText, NLPBackend
from parsers.relations import is_default
from parsers.tree import EDU, DiscourseTree
from parsers.tree_builder import INTER, INTRA, Pair, assemble, build_merges, label_merges

#: Where shipped models live: ``parsers/models/<name>/``.
MODELS_DIR = Path(__file__).resolve().parent / "models"
DEFAULT_MODEL = "gum-sklearn-v1"
TRAIN_HINT = "python -m parsers.train --gum ../shared/data/gum_rst --out {folder}"
MODEL_FILE = "model.joblib"
ESTIMATORS_FILE = "estimators.joblib"
MANIFEST_FILE = "manifest.json"


@dataclass
class LinearComponent:
    """A ``DictVectorizer`` + logistic-regression classifier (binary, or one-vs-rest) over feature dicts.

    Inference multiplies by the stacked weights directly: sklearn's per-call input
    validation cost more than the arithmetic on the short texts the parser sees.
    """

    vectorizer: Any
    classifier: Any

    def __getstate__(self) -> dict[str, Any]:
        # Only the fitted estimators are persisted; the stacked weights are rebuilt on load.
        return {"vectorizer": self.vectorizer, "classifier": self.classifier}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.vectorizer = state["vectorizer"]
        self.classifier = state["classifier"]

    @property
    def classes(self) -> list:
        return list(self.classifier.classes_)

    def transform(self, feats: list[dict[str, float]]):
        """Return the CSR matrix of ``feats`` (32-bit indices, as liblinear requires)."""
        X = self.vectorizer.transform(feats).tocsr()
        X.indices = X.indices.astype(np.int32, copy=False)
        X.indptr = X.indptr.astype(np.int32, copy=False)
        return X

    def _weights(self) -> tuple[np.ndarray, np.ndarray]:
        cached = self.__dict__.get("_stacked")
        if cached is None:
            ests = getattr(self.classifier, "estimators_", None) or [self.classifier]
            W = np.vstack([np.asarray(e.coef_, dtype=np.float32).reshape(1, -1) for e in ests]).T
            b = np.array([float(np.ravel(e.intercept_)[0]) for e in ests], dtype=np.float32)
            cached = (np.ascontiguousarray(W), b)
            self.__dict__["_stacked"] = cached
        return cached

    def compact(self) -> CompactLinear:
        """Return the sklearn-free inference form of this component."""
        W, b = self._weights()
        vocab = {name: int(i) for name, i in self.vectorizer.vocabulary_.items()}
        return CompactLinear(vocabulary=vocab, weights=W, intercepts=b, classes=[c.item() if hasattr(c, "item") else c
                                                                                 for c in self.classes])

    def predict_proba(self, feats: list[dict[str, float]]) -> np.ndarray:
        """Return the class-probability matrix (rows follow ``feats``; columns follow ``classes``).

        Same values as the sklearn estimator's ``predict_proba`` (binary: logistic; one-vs-rest:
        per-class logistic scores normalised to sum to one).
        """
        W, b = self._weights()
        scores = np.asarray(self.transform(feats) @ W) + b
        sig = 1.0 / (1.0 + np.exp(-scores))
        if sig.shape[1] == 1:
            return np.hstack([1.0 - sig, sig])
        return sig / np.maximum(sig.sum(axis=1, keepdims=True), 1e-12)


@dataclass
class CompactLinear:
    """The inference form of a ``LinearComponent``: feature index, stacked weights, biases and classes.

    Plain Python/numpy objects only, so loading the shipped model imports neither
    scikit-learn nor scipy (that import alone took longer than the 2 s load budget on a busy machine).
    """

    vocabulary: dict[str, int]
    weights: np.ndarray  # (n_features, n_outputs) float32
    intercepts: np.ndarray  # (n_outputs,) float32
    classes: list

    def decision(self, feats: list[dict[str, float]]) -> np.ndarray:
        """Return the raw linear scores, one row per feature dict."""
        out = np.empty((len(feats), self.weights.shape[1]), dtype=np.float32)
        vocab = self.vocabulary
        for r, f in enumerate(feats):
            idx = [vocab[k] for k in f if k in vocab]
            if idx:
                vals = np.fromiter((f[k] for k in f if k in vocab), dtype=np.float32, count=len(idx))
                out[r] = vals @ self.weights[idx] + self.intercepts
            else:
                out[r] = self.intercepts
        return out

    def predict_proba(self, feats: list[dict[str, float]]) -> np.ndarray:
        """Return class probabilities as sklearn computes them (logistic; one-vs-rest normalised)."""
        sig = 1.0 / (1.0 + np.exp(-self.decision(feats)))
        if sig.shape[1] == 1:
            return np.hstack([1.0 - sig, sig])
        return sig / np.maximum(sig.sum(axis=1, keepdims=True), 1e-12)

    def to_dict(self) -> dict[str, Any]:
        """Return the picklable plain-data form (see ``from_dict``)."""
        return {"vocabulary": self.vocabulary, "weights": self.weights, "intercepts": self.intercepts,
                "classes": list(self.classes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompactLinear:
        return cls(vocabulary=dict(data["vocabulary"]), weights=np.asarray(data["weights"], dtype=np.float32),
                   intercepts=np.asarray(data["intercepts"], dtype=np.float32), classes=list(data["classes"]))


@dataclass
class ParserModel:
    """The learned components of the trained parser, with their manifest."""

    segmenter: LinearComponent | CompactLinear
    seg_threshold: float
    structure: dict[str, LinearComponent | CompactLinear]
    labeller: dict[str, LinearComponent | CompactLinear]
    manifest: dict[str, Any] = field(default_factory=dict)
    #: Factor on the probabilities of default relations (Elaboration, Joint, ...) before the argmax:
    #: above 1 trades non-default recall for precision. Chosen on dev by ``parsers.train``.
    default_bias: float = 1.0
    #: Subtracted per EDU of a candidate cross-sentence merge from its merge probability: a prior
    #: for merging small neighbours first (balanced document trees). Chosen on dev by ``parsers.train``.
    size_penalty: float = 0.0

    # --- inference ----------------------------------------------------------
    def segment(self, analyzed: AnalyzedText) -> list[EduView]:
        """Return the EDUs (token ranges) the segmenter finds in ``analyzed``."""
        n = len(analyzed.tokens)
        if n == 0:
            return []
        labels = [0] * n
        labels[0] = 1
        if n > 1:
            probs = self.segmenter.predict_proba(all_boundary_features(analyzed)[1:])
            pos = self.segmenter.classes.index(1)
            for i, p in enumerate(probs[:, pos], start=1):
                labels[i] = int(p >= self.seg_threshold)
        # Line breaks (kept by clean_text) always end a unit; the break itself joins the unit before it.
        toks = analyzed.tokens
        for i in range(1, n):
            if toks[i].text.isspace():
                labels[i] = 0
            elif "\n" in toks[i - 1].text or "\n" in toks[i - 1].whitespace:
                labels[i] = 1
        return edus_from_labels(analyzed, labels)

    def merge_scores(self, ctx: DocContext, pairs: list[Pair], level: str) -> list[float]:
        """Return the probability that each adjacent pair forms a constituent."""
        comp = self.structure[level]
        probs = comp.predict_proba([pair_features(ctx, a, b, level=level) for a, b in pairs])
        scores = probs[:, comp.classes.index(1)]
        if level == INTER and self.size_penalty:
            sizes = np.array([b[1] - a[0] + 1 for a, b in pairs], dtype=np.float32)
            scores = scores - self.size_penalty * sizes
        return [float(x) for x in scores]

    def labels(self, ctx: DocContext, pairs: list[Pair], level: str) -> list[tuple[str, str]]:
        """Return (relation, nuclearity) for each merged pair."""
        comp = self.labeller[level]
        probs = comp.predict_proba([pair_features(ctx, a, b, level=level) for a, b in pairs])
        classes = comp.classes
        if self.default_bias != 1.0:
            probs = probs * self._class_bias(level)
        out = []
        for row in probs:
            rel, nuc = str(classes[int(row.argmax())]).split("|")
            out.append((rel, nuc))
        return out

    def _class_bias(self, level: str) -> np.ndarray:
        return np.array([self.default_bias if is_default(str(c).split("|")[0]) else 1.0
                         for c in self.labeller[level].classes], dtype=np.float32)

    def build(self, ctx: DocContext):
        """Return the root ``Node`` of the tree over ``ctx.edus``."""
        merges = build_merges(
            [e.sentence for e in ctx.edus],
            score_intra=lambda pairs: self.merge_scores(ctx, pairs, INTRA),
            score_inter=lambda pairs: self.merge_scores(ctx, pairs, INTER),
        )
        labels = label_merges(
            merges,
            label_intra=lambda pairs: self.labels(ctx, pairs, INTRA),
            label_inter=lambda pairs: self.labels(ctx, pairs, INTER),
        )
        return assemble(len(ctx.edus), merges, labels)

    # --- persistence --------------------------------------------------------
    def to_disk(self, path: Path | str, *, manifest: dict[str, Any] | None = None) -> None:
        """Write ``model.joblib`` (inference weights), ``estimators.joblib`` (the fitted scikit-learn
        vectorizers and classifiers, when this model holds them) and ``manifest.json`` into ``path``.

        Every file is serialised before the first is written (``parsers.files.atomic_write``), so a failed save
        never leaves a half model.
        """
        import io

        import joblib

        from parsers.files import atomic_write, check_out_dir

        out = check_out_dir(path)
        out.mkdir(parents=True, exist_ok=True)
        if manifest is not None:
            self.manifest = manifest

        def compact(c):
            return (c.compact() if isinstance(c, LinearComponent) else c).to_dict()

        payload = {"format": 2, "segmenter": compact(self.segmenter), "seg_threshold": self.seg_threshold,
                   "structure": {k: compact(c) for k, c in self.structure.items()},
                   "labeller": {k: compact(c) for k, c in self.labeller.items()},
                   "default_bias": self.default_bias, "size_penalty": self.size_penalty}
        written = [(MODEL_FILE, payload)]
        if isinstance(self.segmenter, LinearComponent):
            written.append((ESTIMATORS_FILE, {"segmenter": self.segmenter, "structure": self.structure,
                                              "labeller": self.labeller}))
        data = {}
        for name, obj in written:
            buf = io.BytesIO()
            joblib.dump(obj, buf, compress=("zlib", 6))
            data[name] = buf.getvalue()
        data[MANIFEST_FILE] = (json.dumps(self.manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")
        for name, blob in data.items():
            atomic_write(out / name, lambda fh, blob=blob: fh.write(blob))

    @classmethod
    def from_disk(cls, path: Path | str) -> ParserModel:
        """Return the model stored in directory ``path``; raises ``ModelNotAvailableError`` when absent or unreadable."""
        import joblib

        folder = Path(path)
        model_file = folder / MODEL_FILE
        if not model_file.is_file():
            raise ModelNotAvailableError(f"no trained parser model at {folder}; train one with "
                                         + TRAIN_HINT.format(folder=folder))
        manifest: dict[str, Any] = {}
        if (folder / MANIFEST_FILE).is_file():
            manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
        try:
            payload = joblib.load(model_file)
            if not isinstance(payload, dict) or "segmenter" not in payload:
                raise ValueError("not a trained parser model")

            def load(c):
                return CompactLinear.from_dict(c) if isinstance(c, dict) else c

            return cls(segmenter=load(payload["segmenter"]), seg_threshold=float(payload["seg_threshold"]),
                       structure={k: load(c) for k, c in payload["structure"].items()},
                       labeller={k: load(c) for k, c in payload["labeller"].items()}, manifest=manifest,
                       default_bias=float(payload.get("default_bias", 1.0)),
                       size_penalty=float(payload.get("size_penalty", 0.0)))
        except Exception as exc:  # joblib/pickle raise many types on corrupt files
            raise ModelNotAvailableError(f"cannot load trained parser model {model_file}: {exc}") from None


def resolve_model_dir(model: str | Path) -> Path:
    """Return the directory of ``model``: a model name under ``MODELS_DIR`` or ``data_home()/models``, or a path.

    Raises ``ModelNotAvailableError`` for ``DEFAULT_MODEL`` when it has not been trained here (with the command
    that trains it), ``ConfigError`` for any other name that exists nowhere.
    """
    from parsers.home import data_home

    homes = (MODELS_DIR, data_home() / "models")
    for home in homes:
        if (home / str(model)).is_dir():
            return home / str(model)
    path = Path(model)
    if path.is_dir():
        return path
    if str(model) == DEFAULT_MODEL:
        folder = homes[1] / DEFAULT_MODEL
        raise ModelNotAvailableError(f"the trained parser's model {DEFAULT_MODEL} is not shipped; train it with "
                                     + TRAIN_HINT.format(folder=folder))
    known = sorted({p.name for home in homes if home.is_dir() for p in home.iterdir() if p.is_dir()})
    raise ConfigError(f"unknown trained parser model {str(model)!r}; known: {', '.join(known) or 'none'}")


def edus_to_tree_edus(analyzed: AnalyzedText, views: Sequence[EduView]) -> list[EDU]:
    """Return ``EDU`` objects (text, character span, sentence number) for token-range ``views``.

    ``lemmas`` and ``entities`` are left empty; ``TrainedParser`` fills them.
    """
    toks = analyzed.tokens
    out = []
    for k, v in enumerate(views):
        words = [t for t in toks[v.start: v.end] if not t.text.isspace()] or list(toks[v.start: v.end])
        start = words[0].idx
        end = words[-1].end
        out.append(EDU(index=k, text=analyzed.text[start:end], start=start, end=end, sentence=v.sentence))
    return out


@register_parser("trained")
class TrainedParser(RSTParser):
    """RST parser running the scikit-learn models trained on GUM by ``parsers.train``."""

    name = "trained"

    def __init__(self, *, model: str = DEFAULT_MODEL, nlp: NLPBackend | None = None,
                 named_entities: bool = False) -> None:
        if not isinstance(model, (str, Path)) or not str(model):
            raise ConfigError(f"model must be a model name or directory, got {model!r}")
        self.model_name = str(model)
        self.named_entities = bool(named_entities)
        started = time.perf_counter()
        self.model = ParserModel.from_disk(resolve_model_dir(model))
        if nlp is None:
            from parsers.nlp_spacy import SpacyBackend

            # NER costs as much as the parser and only adds entity phrases noun chunks mostly hold (as in "rules").
            nlp = SpacyBackend(disable=() if self.named_entities else ("ner",))
        self.nlp = nlp
        self.load_seconds = time.perf_counter() - started

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_name, "named_entities": self.named_entities}

    def parse(self, text: str) -> DiscourseTree:
        return next(self.parse_many([text]))

    def parse_many(self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1) -> Iterator[DiscourseTree]:
        from parsers.text_input import clean_text

        cleaned = [clean_text(t) for t in texts]
        for analyzed in self.nlp.analyze_many(cleaned, batch_size=batch_size, n_process=n_process):
            yield self.parse_analyzed(analyzed)

    def parse_analyzed(self, analyzed: AnalyzedText) -> DiscourseTree:
        """Return the discourse tree of an already analysed (cleaned) text."""
        if not analyzed.tokens:
            raise InputError("text has no words to parse")
        views = self.model.segment(analyzed)
        # Renumber sentences densely so EDU.sentence counts sentences of this text.
        sent_ids = {s: k for k, s in enumerate(sorted({v.sentence for v in views}))}
        views = [EduView(start=v.start, end=v.end, sentence=sent_ids[v.sentence]) for v in views]
        edus = edus_to_tree_edus(analyzed, views)
        edus = enrich_edus(analyzed, views, edus)
        if len(edus) == 1:
            return DiscourseTree.single(analyzed.text, edus[0], parser=self.name)
        root = self.model.build(DocContext(analyzed=analyzed, edus=views))
        return DiscourseTree(text=analyzed.text, edus=tuple(edus), root=root, parser=self.name,
                             meta={"model": self.model_name})
