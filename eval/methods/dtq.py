"""DT-Q dialogue formation: the engine's ``AnswerSelector`` over a temporary index of the candidate pool.

``fit`` parses every candidate into a real discourse tree and writes a temporary SQLite index with
``index.builder.build_index`` (once per pool and parser in a run: ``eval.methods.pool_index``); ``rank`` plans the question once (DT-Q split into parts, cached)
and calls ``AnswerSelector.rank`` for the step, with the actual follow-ups and the answers the
method itself selected before (excluded, and given as context for the continuation feature).
"""

from __future__ import annotations

from collections.abc import Sequence

from eval.datasets import PoolAnswer
from eval.methods.base import RankingMethod
from parsers.errors import ConfigError, InputError


class DTQMethod(RankingMethod):
    """The paper's DT-Q dialogue formation through the engine's public API.

    ``use_context``: pass the answers this method selected so far as ``context_ids`` (the engine's
    continuation hint, as in a live session); ``parser``: the RST parser name (default: the project's);
    ``candidates``: retrieval depth per step (default: the engine's); ``ranker``: ``auto`` (default: the
    learned hybrid ranker when the [dense] extra is installed, else the rules), ``learned`` or ``rules``
    (see ``dtdialog.ranking.factory``); ``use_tree=False``: the same engine without the discourse tree
    (``EngineSpec.use_tree``), named ``<name>-no-dt``.
    """

    name = "dtq"
    label = "DT-Q dialogue formation (engine)"

    def __init__(self, *, parser: str | None = None, use_context: bool = True, candidates: int | None = None,
                 progress: bool = False, ranker: str | None = None, use_tree: bool = True) -> None:
        if candidates is not None and candidates < 1:
            raise ConfigError(f"candidates must be at least 1, got {candidates}")
        self.parser_name = parser
        self.use_context = use_context
        self.candidates = candidates
        self.progress = progress
        self.ranker = ranker
        self.use_tree = use_tree
        self.ranker_model: str | None = None  # a model file for the learned ranker (default: the shipped one)
        self.require_agreement: bool | None = None  # learned ranker: True adds the hard agreement filter
        self.build_report = None
        self._index = None
        self._selector = None
        self._plans: dict[str, object] = {}
        if not use_context:
            self.name = "dtq-nocontext"
            self.label = "DT-Q without continuation context"
        if not use_tree:
            self.name += "-no-dt"

    def fit(self, *, pool: Sequence[PoolAnswer]) -> None:
        from dtdialog.setup.assembly import EngineSpec, build_engine, engine_parser_name
        from dtdialog.setup.engine_config import EngineConfig, RetrievalConfig
        from eval.methods.pool_index import pool_index, seed_dense_store, training_pool_note
        from eval.out_of_fold import folds_for, out_of_fold
        from index.registry import open_index
        from parsers.base import get_parser

        self.close()
        parser_name = engine_parser_name(self.parser_name)
        parser = get_parser(parser_name)
        path, self.build_report = pool_index(pool, parser=parser, progress=self.progress)
        retrieval = RetrievalConfig() if self.candidates is None else RetrievalConfig(candidates=self.candidates)
        config = EngineConfig(retrieval=retrieval)
        spec = EngineSpec(parser=parser_name, ranker=self.ranker, ranker_model=self.ranker_model, config=config,
                          learned_require_agreement=bool(self.require_agreement), use_tree=self.use_tree)
        # a question of the ranker's training pool is scored by the fold model that held it out
        index = open_index(backend="sqlite", path=path)
        if self.ranker != "rules":  # the pool's vectors from the cross-run cache, before the engine would encode them
            seed_dense_store(index, path, progress=self.progress)
        engine = build_engine(spec, progress=self.progress, parser=parser, index=index, index_path=path,
                              wrap_scorer=out_of_fold(spec.model_path()))
        self._index, self._selector = engine.index, engine.selector
        # Reports must say which ranker the engine resolved to (rules, or the learned hybrid ranker).
        self.resolved_ranker = engine.ranker
        base = "DT-Q" if self.use_context else "DT-Q without continuation context"
        self.label = f"{base} (engine{'' if self.use_tree else ' without the tree'}, {self.resolved_ranker} ranker)"
        if engine.ranker == "learned":
            self.label += training_pool_note(engine.scorer.model, pool, folds_for(engine.scorer.model,
                                                                                  self.ranker_model))
        self._plans = {}

    def _plan(self, question: str):
        plan = self._plans.get(question)
        if plan is None:
            plan = self._plans[question] = self._selector.plan(question)
        return plan

    def rank(self, *, question: str, followups: Sequence[str], step: int, exclude_ids: Sequence[str],
             k: int) -> list[tuple[str, float]]:
        if self._selector is None:
            raise ConfigError("fit() the method on a pool before ranking")
        try:
            plan = self._plan(question)
        except InputError:
            return []  # an empty or unparseable question: the engine has nothing to select
        ranked = self._selector.rank(question=plan, step=step, followups=list(followups), exclude_ids=list(exclude_ids),
                                     size=k, context_ids=list(exclude_ids) if self.use_context else ())
        return [(c.document.id, float(c.score)) for c in ranked]

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None
        self._selector = None


def dtq_without_context(**options) -> DTQMethod:
    """Return the rule-based DT-Q without the continuation hint: what following the logged dialogue order adds."""
    options.setdefault("ranker", "rules")
    return DTQMethod(use_context=False, **options)


def dtq_rules(**options) -> DTQMethod:
    """Return DT-Q with the engine's rule scorer: the paper's method, whatever ``$DTDIALOG_RANKER`` says."""
    options.setdefault("ranker", "rules")
    method = DTQMethod(**options)
    method.name = "dtq-rules"
    return method


def dtq_without_tree(**options) -> DTQMethod:
    """Return DT-Q without the discourse tree: the ablation paired with ``dtq`` (``--tree-ablation``)."""
    return DTQMethod(use_tree=False, **options)


def dtq_rules_without_tree(**options) -> DTQMethod:
    """Return ``dtq-rules`` without the discourse tree (the rule scorer, agreement weight 0)."""
    method = dtq_rules(use_tree=False, **options)
    method.name = "dtq-rules-no-dt"
    return method
