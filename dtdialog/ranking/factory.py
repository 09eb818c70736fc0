"""Choose the engine's candidate generator and scorer: learned hybrid ranking when possible, else the rules.

``build_ranking`` returns ``(generator, scorer)`` for ``AnswerSelector``:

* ``ranker="rules"``: ``(None, None)`` - the selector's lexical generator and ``RuleScorer``;
* ``ranker="learned"``: hybrid generator + ``LearnedScorer`` with the shipped model; raises
  ``ModelNotAvailableError`` when the ``[dense]`` extra, the vectors or the model are missing;
* ``ranker="auto"`` (default here, or ``$DTDIALOG_RANKER``): learned when the extra is installed, else
  the rules, saying so once in the log ("dense retrieval unavailable ... ranking lexically").

``load_runtime`` (chat, API) and the evaluation's ``dtq`` use ``auto`` unless told otherwise
(``--ranker``, ``ApiSettings.ranker`` or ``$DTDIALOG_RANKER``): the learned ranker whenever the
[dense] extra is installed; ``rules`` keeps the paper's rule scorer (see docs/ranking.md).

Dense vectors of a SQLite index live beside it (``index.dense_store``); ``auto``/``learned`` build
them on first use when the extra is installed (a progress bar, once per index); so are the answers'
syntactic-generalization phrases (``index.sg_store``) when the model uses the ``sg`` feature.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from dtdialog.engine_config import EngineConfig
from index.base import AnswerIndex
from parsers.errors import ConfigError, ModelNotAvailableError

log = logging.getLogger("dtdialog.ranking")
RANKERS = ("auto", "learned", "rules")
RANKER_ENV = "DTDIALOG_RANKER"
_warned = False


def ranking_status() -> str:
    """Return a one-line account of which ranker ``auto`` picks here and why."""
    from index.dense import dense_available

    if not dense_available():
        return "lexical: the [dense] extra is not installed (pip install 'dtdialog[dense]')"
    return "learned hybrid ranker (dense + lexical + rhetorical-agreement features)"


def _warn_once(message: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        log.warning(message)


def engine_default_ranker() -> str:
    """Return the interactive engine's ranker: ``$DTDIALOG_RANKER`` when set, else ``auto``."""
    return resolve_ranker(os.environ.get(RANKER_ENV) or "auto")


def resolve_ranker(ranker: str | None) -> str:
    """Return the ranker name to use: ``ranker``, else ``$DTDIALOG_RANKER``, else ``auto``."""
    name = (ranker or os.environ.get(RANKER_ENV) or "auto").strip().lower()
    if name not in RANKERS:
        raise ConfigError(f"unknown ranker {name!r}; expected one of {', '.join(RANKERS)}")
    return name


def build_ranking(*, index: AnswerIndex, index_path: str | Path | None, config: EngineConfig | None = None,
                  ranker: str | None = None, model_path: str | Path | None = None, encoder=None,
                  progress: bool = True, require_agreement: bool | None = None, out_of_fold: bool = False):
    """Return ``(generator, scorer)`` for ``AnswerSelector`` (``(None, None)`` means the rule-based defaults).

    ``require_agreement=True`` drops candidates whose rhetorical agreement verdict is negative, as the
    rule scorer does under ``config.require_agreement``. The learned ranker's default is False: the
    model was trained with agreement as a feature, and on the built-in dialogues the hard filter on top
    of it cost 40 points of step-1 accuracy (docs/ranking.md). ``out_of_fold=True`` (evaluations only)
    scores a question the model was trained on with the cross-validation model that held it out.
    """
    from index.dense import INSTALL_HINT, dense_available

    name = resolve_ranker(ranker)
    if name == "rules":
        return None, None
    if not dense_available():
        if name == "learned":
            raise ModelNotAvailableError(f"the learned ranker needs the [dense] extra ({INSTALL_HINT})")
        _warn_once(f"dense retrieval unavailable ({INSTALL_HINT}); ranking lexically with the rule scorer")
        return None, None
    es_info = _es_dense_info(index) if index_path is None else None
    es_vectors = es_info is not None
    if index_path is None and not es_vectors:
        if getattr(index, "backend", "") == "elasticsearch":
            from dtdialog.ranking.es_dense import no_vectors_message

            message = no_vectors_message(index.index_name)
        else:
            message = "the learned ranker needs a SQLite index file (dense vectors live beside it)"
        if name == "learned":
            raise ModelNotAvailableError(message)
        _warn_once(f"{message}; ranking lexically with the rule scorer")
        return None, None
    from dtdialog.ranking.dense_signals import DenseSignals
    from dtdialog.ranking.hybrid_generator import HybridGenerator
    from dtdialog.ranking.learned_scorer import LearnedScorer, RankerModel
    from dtdialog.ranking.signals import SignalExtractor
    from index.dense import DenseEncoder

    try:
        model = RankerModel.load(model_path)
    except ModelNotAvailableError as exc:
        if name == "learned":
            raise
        _warn_once(f"{exc}; ranking lexically with the rule scorer")
        return None, None
    cfg = config or EngineConfig()
    depth = int(model.manifest.get("k") or cfg.candidates)  # the list depth the model was trained on
    if es_vectors:  # vectors, hubness and term statistics live in the Elasticsearch index: one request per step
        from dtdialog.ranking.es_dense import ElasticHybridGenerator, es_dense_signals

        dense = es_dense_signals(index, encoder=encoder or DenseEncoder())
        generator = ElasticHybridGenerator(index=index, dense=dense, dense_k=depth, lexical_k=depth)
    else:
        store = _store_for(index, Path(index_path), encoder=encoder, progress=progress)
        dense = DenseSignals(store=store, encoder=encoder or DenseEncoder())
        generator = HybridGenerator(index=index, dense=dense, dense_k=depth, lexical_k=depth)
    sg_store = None
    if model.uses_sg and es_vectors and es_info.get("sg"):  # phrases stored in the ES documents
        from index.sg_store import ElasticSGPhrases

        sg_store = ElasticSGPhrases(index=index)
    elif model.uses_sg and index_path is not None:  # answers' SG phrases parsed at index time: no answer is spaCy-parsed per turn
        from index.sg_store import sg_store_for

        sg_store = sg_store_for(index, Path(index_path), progress=progress)
    scorer = LearnedScorer(model=model, extractor=SignalExtractor(dense=dense, use_sg=model.uses_sg, sg_store=sg_store),
                           config=cfg, require_agreement=bool(require_agreement), out_of_fold=out_of_fold)
    if isinstance(generator, HybridGenerator):  # the query's SG parse overlaps the searches and agreement checks
        generator.prefetch = (scorer.extractor.prefetch,)
    _warm_up(dense=dense, use_sg=model.uses_sg)
    return generator, scorer


def _warm_up(*, dense, use_sg: bool) -> None:
    """Load the lazily loaded query encoder and spaCy pipeline now, not in the first user's turn.

    A process serving turns then freezes what is loaded (``dtdialog.gc_tuning.freeze_loaded``,
    called by ``load_runtime`` and the benchmarks: a process-wide setting is the caller's choice).
    """
    try:
        dense.query_vector("warm up")
        if use_sg:
            from dtdialog.syntactic_generalization import _default

            _default().nlp  # noqa: B018 - loads the shared spaCy pipeline (the RST parser's too)
    except Exception as exc:  # noqa: BLE001 - warming is an optimisation; a real problem surfaces on the first turn
        log.debug("could not pre-load the query encoder / spaCy: %s", exc)


def _es_dense_info(index: AnswerIndex) -> dict | None:
    """Return the ``dense_info()`` of an Elasticsearch index built with dense vectors, else None."""
    return index.dense_info() if getattr(index, "backend", "") == "elasticsearch" else None


def _store_for(index: AnswerIndex, path: Path, *, encoder, progress: bool):
    """Return the dense store beside ``path``, built when missing and refreshed when out of step with the index.

    "Out of step" means the index was written since (its ``generation`` differs) or, for an index
    without generations, that the answer counts differ. A refresh re-encodes only new or edited
    answers (``refresh_dense_store``); a damaged store is derived data and is rebuilt.
    """
    from index.dense_store import DenseStore, build_dense_store, refresh_dense_store

    generation = index.generation() if hasattr(index, "generation") else ""
    store = None
    if DenseStore.exists(path):
        try:
            store = DenseStore.load(path)
        except Exception as exc:  # noqa: BLE001 - a damaged store is derived data: rebuild it
            log.warning("rebuilding the dense vectors beside %s: %s", path, exc)
            store = None
    if store is not None and len(store) == index.count() and (not generation or store.generation == generation):
        return store
    doc_ids, texts = index.answer_texts()
    if store is None:
        store = build_dense_store(ids=doc_ids, texts=texts, encoder=encoder, progress=progress)
    else:
        store, encoded = refresh_dense_store(store, ids=doc_ids, texts=texts, encoder=encoder, progress=progress)
        log.info("dense vectors beside %s refreshed: %d answer(s) encoded", path, encoded)
    store.generation = generation
    store.save(path)
    return DenseStore.load(path)
