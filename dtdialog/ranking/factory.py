"""The learned ranking parts of the engine: which ranker ``auto`` means here, and the hybrid generator + scorer.

``dtdialog.setup.assembly.build_engine`` is the only caller that joins these into an engine:

* ``resolve_ranker`` names the ranker (``auto``, ``learned``, ``rules``; default ``$DTDIALOG_RANKER`` or ``auto``);
* ``learned_usable`` says whether the learned ranker can run over this index: without the ``[dense]`` extra, or
  without a SQLite index file (dense vectors live beside it) or an Elasticsearch index with vectors, ``learned``
  raises ``ModelNotAvailableError`` and ``auto`` falls back to the rules, saying so once in the log
  ("dense retrieval unavailable ... ranking lexically");
* ``learned_ranking`` returns the ``HybridGenerator`` (or ``ElasticHybridGenerator``) and ``LearnedScorer``.

Dense vectors of a SQLite index live beside it (``index.dense_store``), and so do the answers'
syntactic-generalization phrases (``index.sg_store``) the model's ``sg`` feature reads: ``dense_vectors`` and
``sg_phrases`` build what is missing (a progress bar, once per index); ``dtdialog.setup.assembly.build_side_files``,
the index step ``build_engine`` runs before it makes the ranking, calls them.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from dtdialog.setup.engine_config import EngineConfig
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


def warn_once(message: str) -> None:
    """Log ``message`` the first time a fallback to the rules happens in this process."""
    global _warned
    if not _warned:
        _warned = True
        log.warning(message)


def resolve_ranker(ranker: str | None) -> str:
    """Return the ranker name to use: ``ranker``, else ``$DTDIALOG_RANKER``, else ``auto``."""
    name = (ranker or os.environ.get(RANKER_ENV) or "auto").strip().lower()
    if name not in RANKERS:
        raise ConfigError(f"unknown ranker {name!r}; expected one of {', '.join(RANKERS)}")
    return name


def learned_usable(name: str, *, index: AnswerIndex | None, index_path: str | Path | None) -> bool:
    """Return True when the learned ranker can run over ``index``; ``name`` is ``learned`` or ``auto``.

    ``learned`` raises ``ModelNotAvailableError`` where ``auto`` logs the reason once and returns False.
    """
    from index.dense import INSTALL_HINT, dense_available

    if not dense_available():
        if name == "learned":
            raise ModelNotAvailableError(f"the learned ranker needs the [dense] extra ({INSTALL_HINT})")
        warn_once(f"dense retrieval unavailable ({INSTALL_HINT}); ranking lexically with the rule scorer")
        return False
    if index_path is not None or _es_dense_info(index) is not None:
        return True
    if getattr(index, "backend", "") == "elasticsearch":
        from dtdialog.ranking.es_dense import no_vectors_message

        message = no_vectors_message(index.index_name)
    else:
        message = "the learned ranker needs a SQLite index file (dense vectors live beside it)"
    if name == "learned":
        raise ModelNotAvailableError(message)
    warn_once(f"{message}; ranking lexically with the rule scorer")
    return False


def load_model(name: str, path: str | Path | None, *, deferred: bool = False):
    """Return the ``RankerModel`` at ``path`` (default: the shipped one), or None when ``auto`` falls back.

    ``deferred``: read the manifest now and unpickle the estimator on first use (``RankerModel.load_deferred``).
    """
    from dtdialog.ranking.learned_scorer import RankerModel

    try:
        return RankerModel.load_deferred(path) if deferred else RankerModel.load(path)
    except ModelNotAvailableError as exc:
        if name == "learned":
            raise
        warn_once(f"{exc}; ranking lexically with the rule scorer")
        return None


def dense_vectors(index: AnswerIndex, index_path: str | Path | None, *, encoder, progress: bool):
    """Return the dense store beside a SQLite index, encoding the answers it lacks first (None over
    Elasticsearch, whose documents hold their vectors): the index build's dense step."""
    if index_path is None:
        return None
    return _store_for(index, Path(index_path), encoder=encoder, progress=progress)


def sg_phrases(index: AnswerIndex, index_path: str | Path | None, *, progress: bool):
    """Return the answers' SG phrases parsed at index time, parsing the answers the store beside a SQLite index lacks
    first (the index build's SG step), or those stored in an Elasticsearch index; None when there are none."""
    if index_path is not None:
        from index.sg_store import sg_store_for

        return sg_store_for(index, Path(index_path), progress=progress)
    if (_es_dense_info(index) or {}).get("sg"):  # phrases stored in the Elasticsearch documents
        from index.sg_store import ElasticSGPhrases

        return ElasticSGPhrases(index=index)
    return None


def learned_ranking(*, index: AnswerIndex, index_path: str | Path | None, model, config: EngineConfig,
                    depth: int | None = None, encoder=None, require_agreement: bool = False, progress: bool = True,
                    warm: bool = True, store=None, sg_store=None):
    """Return ``(generator, scorer)`` of the learned ranker over ``index`` (``learned_usable`` said it can run).

    ``depth`` is the candidate-list depth of each retriever; by default the one the model was trained on.
    ``require_agreement=True`` drops candidates whose rhetorical agreement verdict is negative. Its default is
    False: the model was trained with agreement as a feature, so a hard filter on top of it drops right answers
    the model already weighs (docs/ranking.md).
    ``warm=False`` leaves the query encoder and spaCy to load on first use, or in ``warm_up_scorer``.
    ``store``: the dense store ``dense_vectors`` returned; ``sg_store``: the phrases ``sg_phrases`` returned, read
    when the model uses the ``sg`` feature (None: each is opened, or built, here).
    """
    from dtdialog.ranking.learned_scorer import LearnedScorer
    from dtdialog.ranking.signals import SignalExtractor

    # the list depth the model was trained on
    depth = depth or int(model.manifest.get("k") or config.retrieval.candidates)
    generator, dense = _hybrid_generator(index, index_path, depth=depth, encoder=encoder, progress=progress,
                                         store=store)
    if not model.uses_sg:
        sg_store = None
    elif sg_store is None:  # a caller without build_engine's index step: open (or build) the phrases here
        sg_store = sg_phrases(index, index_path, progress=progress)
    extractor = SignalExtractor(dense=dense, use_sg=model.uses_sg, sg_store=sg_store, use_sides=model.uses_sides)
    scorer = LearnedScorer(model=model, extractor=extractor, config=config, require_agreement=require_agreement)
    if index_path is not None:  # HybridGenerator: the query's SG parse overlaps the searches and agreement checks
        generator.prefetch = (scorer.extractor.prefetch,)
    if warm:
        warm_up_scorer(scorer)
    return generator, scorer


def _hybrid_generator(index: AnswerIndex, index_path: str | Path | None, *, depth: int, encoder, progress: bool,
                      store=None):
    """Return ``(generator, dense signals)``: vectors beside a SQLite file, or inside an Elasticsearch index."""
    from dtdialog.ranking.dense_signals import DenseSignals
    from dtdialog.ranking.hybrid_generator import HybridGenerator
    from index.dense import DenseEncoder

    if index_path is None:  # vectors, hubness and term statistics live in Elasticsearch: one request per step
        from dtdialog.ranking.es_dense import ElasticHybridGenerator, es_dense_signals

        dense = es_dense_signals(index, encoder=encoder or DenseEncoder())
        return ElasticHybridGenerator(index=index, dense=dense, dense_k=depth, lexical_k=depth), dense
    encoder = encoder or DenseEncoder()
    store = store or _store_for(index, Path(index_path), encoder=encoder, progress=progress)
    dense = DenseSignals(store=store, encoder=encoder)
    return HybridGenerator(index=index, dense=dense, dense_k=depth, lexical_k=depth), dense


def warm_up_scorer(scorer) -> None:
    """Load the lazily loaded query encoder and spaCy pipeline of a ``LearnedScorer`` now, not in the first turn.

    A process serving turns then freezes what is loaded (``dtdialog.runtime.gc_tuning.freeze_loaded``,
    called by the serving commands and the benchmarks: a process-wide setting is the caller's choice).
    """
    from dtdialog.ranking.learned_scorer import DeferredEstimator

    dense, use_sg = scorer.extractor.dense, scorer.model.uses_sg
    if isinstance(scorer.model.estimator, DeferredEstimator):
        scorer.model.estimator.load()  # not an optimisation: a model file that cannot be read must say so
    try:
        if dense is not None:
            dense.query_vector("warm up")
        if use_sg:
            from dtdialog.selection.syntactic_generalization import default_generalizer

            default_generalizer().nlp  # noqa: B018 - loads the shared spaCy pipeline (the RST parser's too)
    except Exception as exc:  # noqa: BLE001 - warming is an optimisation; a real problem surfaces on the first turn
        log.debug("could not pre-load the query encoder / spaCy: %s", exc)


def _es_dense_info(index: AnswerIndex) -> dict | None:
    """Return the ``dense_info()`` of an Elasticsearch index built with dense vectors, else None."""
    return index.dense_info() if getattr(index, "backend", "") == "elasticsearch" else None


def _store_for(index: AnswerIndex, path: Path, *, encoder, progress: bool):
    """Return the dense store beside ``path``, built when missing and refreshed when out of step with the index.

    The store is looked up by the generation of the index as opened (``index.index_files``), so a file
    rebuilt in between is never paired with the other's vectors. "Out of step" means the index was written
    since (its ``generation`` differs) or, for an index without generations, that the answer counts differ;
    a store made by another encoder (another runtime or precision: its id differs) is re-encoded whole, one labelled
    before ids named the runtime only when a probe shows another runtime made it. A refresh re-encodes only new or edited answers (``refresh_dense_store``), starting from the newest store
    of any generation; a damaged store is derived data and is rebuilt.
    """
    from index.dense_store import DenseStore, build_dense_store, encoder_id, refresh_dense_store, unsettled_label
    from index.index_files import prune_side_files

    generation = index.generation()
    store = None
    try:
        store = DenseStore.load(path, generation=generation, latest=True)
    except ModelNotAvailableError:
        pass
    except Exception as exc:  # noqa: BLE001 - a damaged store is derived data: rebuild it
        log.warning("rebuilding the dense vectors beside %s: %s", path, exc)
    if store is not None and len(store) == index.count() and (not generation or store.generation == generation) \
            and store.model == encoder_id(encoder):
        return store
    if store is not None and store.model != encoder_id(encoder) and not unsettled_label(store, encoder):
        log.warning("re-encoding the answers beside %s: their vectors were made by %s, queries by %s", path,
                    store.model, encoder_id(encoder))
    doc_ids, texts = index.answer_texts()
    if store is None:
        store = build_dense_store(ids=doc_ids, texts=texts, encoder=encoder, progress=progress)
    else:
        store, encoded = refresh_dense_store(store, ids=doc_ids, texts=texts, encoder=encoder, progress=progress)
        log.info("dense vectors beside %s refreshed: %d answer(s) encoded", path, encoded)
    store.generation = generation
    store.save(path)
    prune_side_files(path, generation, kinds=("dense",))  # older vectors are no use to anyone now
    return DenseStore.load(path, generation=generation)
