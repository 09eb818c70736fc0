"""The one place where an engine is put together: ``build_engine(EngineSpec(...))``.

An ``EngineSpec`` is plain data that chooses an engine: the RST parser, where the answer index lives (or the
corpus it is built from), the ranker and its model, the ``EngineConfig`` and the session store. It is saved
and loaded as JSON stamped with a format version, so a run can say exactly which engine it measured.

``build_engine`` joins parser, index, candidate generation, scorer, ``AnswerSelector``, session store and
``DialogueManager`` into an ``Engine``. The chat and serve commands, the API and every evaluation method and
benchmark call it; the evaluation's needs are explicit keyword hooks (an already open pool index, a scorer
wrapper, a query encoder), never flags that change what a spec means, and none reaches into index building.

Building the index is explicit and comes first: ``ensure_index`` opens the index (building it when missing or
when the spec names a corpus), then ``build_side_files`` makes the learned ranker's dense vectors and SG phrases
beside it ready; the ranking only loads them. A saved spec records what this machine resolved
(``dtdialog.setup.spec_resolution``). With no index location the built-in corpus is used: its index is built once into
``dtdialog.runtime.paths.data_home()`` under a name derived from the parser and the corpus content, so an edited
corpus or another parser gets a fresh index and an unchanged one is reused.

``use_tree=False`` builds the same engine without the discourse tree (the ablation of ``--no-dt``): the stages of
``dtdialog.selection.stages.stage_set.FLAT_STAGES``, the learned ranker's model without tree features
(``ranker-v1-hybrid``) and the rule scorer's agreement weight 0.

A setting that has no effect under the ranker the spec resolves to is refused with ``ConfigError``: the
rule scorer's options under the learned ranker (``EngineConfig.check_ranker``), and the learned ranker's
options (``ranker_model``, ``learned_require_agreement``, ``candidate_depth``) under the rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from dtdialog.selection.selector import AnswerSelector
from dtdialog.selection.stages.stage_set import stage_set
from dtdialog.setup.engine_config import EngineConfig
from dtdialog.setup.profile import Profile, resolve_profile
from dtdialog.setup.spec_resolution import engine_parser_name
from index.base import AnswerIndex
from index.registry import BACKENDS
from parsers.base import RSTParser, get_parser
from parsers.errors import ConfigError, DTDialogError, InputError

#: The version written into saved specs; ``EngineSpec.load`` refuses any other.
SPEC_FORMAT = 1
CORPUS_FORMATS = ("builtin", "csv", "jsonl", "mechanics", "twitter", "irc")
RANKER_CHOICES = (None, "auto", "learned", "rules")
ENCODER_RUNTIMES = (None, "auto", "onnxruntime", "openvino")
_PATH_FIELDS = ("index_path", "corpus", "ranker_model", "sessions_path", "profile", "calibrator")
#: Fields a saved spec leaves out, and ignores in older files: the loading machine's runtime state, like $DTDIALOG_HOME.
_NOT_SAVED = ("sessions_path",)


@dataclass
class EngineSpec:
    """Everything that chooses an engine; invalid values raise ``ConfigError`` with a one-line message.

    parser: RST parser name (None: ``engine_parser_name()``, i.e. ``$DTDIALOG_PARSER`` or the parser the
        shipped ranker was trained with).
    parser_encoder: neural parser only - what its MiniLM runs (``parsers.neural.encoder.runtime_id``: the model
        file's pin, int8 arithmetic on ONNX Runtime, whatever ``$DTDIALOG_ENCODER_RUNTIME`` says); recorded when
        the spec is saved, another is refused when it is loaded (None: not checked).
    backend: ``sqlite`` or ``elasticsearch``; index_url: the Elasticsearch URL (None: ``$ELASTICSEARCH_URL``); a
        saved spec records it without user:password, which ``$ELASTICSEARCH_URL`` or ``--es-url`` for the same server
        supply when it is loaded (``dtdialog.setup.spec_resolution.saved_es_url``).
    index_path: the SQLite index file (built there from ``corpus`` when missing, rebuilt when both are given).
    corpus, corpus_format: the dialogues to index (None: the built-in corpus).
    corpus_digest: the content digest of the corpus the spec reads (``spec_resolution.corpus_digest``), recorded
        when it is saved; ``load`` and ``build_engine`` refuse other content in one line (None: not checked).
    ranker: ``auto``, ``learned`` or ``rules`` (None: ``$DTDIALOG_RANKER`` or ``auto``); ``auto`` is the learned
        hybrid ranker when the [dense] extra is installed, else the rules (see ``dtdialog.ranking.factory``).
    ranker_model: learned ranker only - the model file (None: the shipped ``ranker-v1.joblib``).
    ranker_version: learned ranker only - the name in the model's manifest; another model is refused (None: any).
    encoder_runtime: learned ranker only - the dense encoder's runtime, ``onnxruntime`` or ``openvino`` (None:
        ``$DTDIALOG_ENCODER_RUNTIME`` or ``auto``).
    learned_require_agreement: learned ranker only - drop candidates whose agreement verdict is negative.
    candidate_depth: learned ranker only - each retriever's list depth (None: the model's training depth).
    sessions_path: the session store of the engine's ``DialogueManager`` (None: no manager); never saved, and
        ignored in a saved spec that has it: the loading machine's ``--sessions`` or default decides.
    config: the ``EngineConfig``.
    profile: a profile YAML file (``dtdialog.setup.profile``) whose wording the engine speaks (None: the profile stored
        in the index, else the built-in corpus's, else the generic one); stored in an index the spec builds.
    use_tree: False runs the engine without the discourse tree (see the module docstring); the learned ranker's
        model must then have no tree features (None ``ranker_model``: the shipped ``ranker-v1-hybrid.joblib``).
    calibrator: a calibrator file fitted on the team's own dialogues (``python -m eval.calibrate --data FILE``), for
        this ranker and model: its confidences are read against a pool like the one it was fitted on (None: the
        shipped calibrator, fitted on the car-repair sets' pools of about 500 answers).
    """

    parser: str | None = None
    parser_encoder: str | None = None
    backend: str = "sqlite"
    index_path: str | None = None
    index_url: str | None = None
    corpus: str | None = None
    corpus_format: str = "builtin"
    corpus_digest: str | None = None
    ranker: str | None = None
    ranker_model: str | None = None
    ranker_version: str | None = None
    encoder_runtime: str | None = None
    learned_require_agreement: bool = False
    candidate_depth: int | None = None
    sessions_path: str | None = None
    config: EngineConfig = field(default_factory=EngineConfig)
    profile: str | None = None
    use_tree: bool = True
    calibrator: str | None = None

    def __post_init__(self) -> None:
        for name in _PATH_FIELDS:  # paths are kept as strings: the spec is JSON data
            value = getattr(self, name)
            if isinstance(value, Path):
                setattr(self, name, str(value))
            elif value is not None and not isinstance(value, str):
                raise ConfigError(f"engine spec: {name} must be a path or null, got {value!r}")
        for name in ("parser", "parser_encoder", "index_url", "ranker_version", "corpus_digest"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise ConfigError(f"engine spec: {name} must be a string or null")
        _check_choice("backend", self.backend, BACKENDS)
        _check_choice("corpus_format", self.corpus_format, CORPUS_FORMATS)
        _check_choice("ranker", self.ranker, RANKER_CHOICES)
        _check_choice("encoder_runtime", self.encoder_runtime, ENCODER_RUNTIMES)
        if self.corpus is not None and self.corpus_format == "builtin":
            raise ConfigError("--corpus needs --format or --corpus-format (csv, jsonl, mechanics, twitter or irc)")
        for name in ("learned_require_agreement", "use_tree"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"engine spec: {name} must be true or false, got {getattr(self, name)!r}")
        depth = self.candidate_depth
        if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 1):
            raise ConfigError(f"engine spec: candidate_depth must be an integer >= 1 or null, got {depth!r}")
        if isinstance(self.config, dict):
            self.config = EngineConfig.from_dict(self.config)
        if not isinstance(self.config, EngineConfig):
            raise ConfigError("engine spec: config must be an engine config object")

    def learned_options(self) -> list[str]:
        """Return the learned-ranker-only options this spec sets (they have no effect under the rules)."""
        return [name for name, unset in (("ranker_model", None), ("ranker_version", None), ("encoder_runtime", None),
                                         ("learned_require_agreement", False), ("candidate_depth", None))
                if getattr(self, name) != unset]

    def model_path(self) -> str | None:
        """Return the learned ranker's model file: ``ranker_model``, else the shipped model without tree features when
        ``use_tree`` is False, else None (the shipped ``ranker-v1.joblib``)."""
        if self.ranker_model is not None or self.use_tree:
            return self.ranker_model
        from dtdialog.ranking.learned_scorer import TREELESS_MODEL

        return str(TREELESS_MODEL)

    def to_dict(self) -> dict[str, Any]:
        """Return the spec as a JSON-ready dict stamped with ``format``."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["config"] = self.config.to_dict()
        return {"format": SPEC_FORMAT, **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EngineSpec:
        """Return the spec in ``data``; a wrong format version or an unknown key raises ``ConfigError``."""
        if not isinstance(data, dict):
            raise ConfigError("engine spec: expected an object")
        data = dict(data)
        version = data.pop("format", SPEC_FORMAT)
        if version != SPEC_FORMAT:
            raise ConfigError(f"engine spec: format {version!r} is not supported (expected {SPEC_FORMAT})")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"engine spec: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**data)

    def save(self, path: str | Path) -> Path:
        """Write the spec, resolved here (``dtdialog.setup.spec_resolution.resolve_spec``), as JSON to ``path``
        (``parsers.files.atomic_write``); return the path."""
        from dtdialog.setup.spec_resolution import resolve_spec
        from parsers.files import atomic_write_text

        path = Path(path)
        data = {k: v for k, v in resolve_spec(self).to_dict().items() if k not in _NOT_SAVED}
        try:
            atomic_write_text(path, json.dumps(data, indent=2) + "\n")
        except OSError as exc:
            raise ConfigError(f"cannot write engine spec {path}: {exc.strerror or exc}") from None
        except InputError as exc:  # a folder, device, FIFO or link there
            raise ConfigError(f"cannot write engine spec: {exc}") from None
        return path

    @classmethod
    def load(cls, path: str | Path, *, accept_corpus: bool = False) -> EngineSpec:
        """Return the spec saved at ``path``, without a session store (``sessions_path`` None whatever the file says);
        an unreadable file, or one this machine cannot build (``dtdialog.setup.spec_resolution.spec_problem``), raises
        ``ConfigError``. ``accept_corpus``: a corpus changed since the spec was saved is taken as it is now (to
        re-save the spec, which records its new digest); otherwise it is refused."""
        from dtdialog.setup.spec_resolution import spec_problem

        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read engine spec {path}: {exc}") from None
        except RecursionError:
            raise ConfigError(f"cannot read engine spec {path}: not valid JSON (nested too deeply)") from None
        if isinstance(data, dict):  # a spec saved with another machine's session store: that store is not ours
            data = {k: v for k, v in data.items() if k not in _NOT_SAVED}
        spec = cls.from_dict(data)
        problem = spec_problem(spec, accept_corpus=accept_corpus, saved_as=str(path))
        if problem is not None:
            raise ConfigError(f"engine spec {path} cannot be built here: {problem}")
        return spec


def _check_choice(name: str, value, choices: tuple) -> None:
    if value not in choices:
        shown = ", ".join(str(c) for c in choices if c is not None)
        raise ConfigError(f"engine spec: unknown {name} {value!r}; expected one of {shown}")


@dataclass
class Engine:
    """A built engine: ``parser``, ``index``, the ``selector`` over them and, with a session store, ``manager``.

    ``ranker`` is the ranker the spec resolved to (``learned`` or ``rules``); ``index_location`` the index file
    (or ``elasticsearch``); ``built`` whether this build (re)built the index; ``profile`` the wording it speaks.
    """

    spec: EngineSpec
    parser: RSTParser
    index: AnswerIndex
    selector: AnswerSelector
    ranker: str
    index_path: Path | None = None
    index_location: str = ""
    built: bool = False
    store: Any = None
    manager: Any = None
    profile: Profile = field(default_factory=Profile)

    @property
    def generator(self):
        """Return the selector's candidate generator."""
        return self.selector.generator

    @property
    def scorer(self):
        """Return the selector's candidate scorer."""
        return self.selector.scorer

    def refresh(self, *, progress: bool = False) -> None:
        """Give the engine a new selector (empty caches) after stored answers changed under the same ids.

        The ranking is rebuilt too: the learned ranker's dense vectors are refreshed for the changed answers.
        """
        model = learned_model(self.spec, index=self.index, index_path=self.index_path)
        side = build_side_files(self.spec, self.index, self.index_path, model=model, progress=progress)
        self.selector, self.ranker = _selector(self.spec, parser=self.parser, index=self.index,
                                               index_path=self.index_path, side=side, hooks=_Hooks(),
                                               progress=progress, profile=self.profile)
        if self.manager is not None:
            self.manager.selector = self.selector
        if self.selector.logged_questions is not None:  # encoded here, not in the next customer's turn
            self.selector.logged_questions.warm_up()

    def warm_up(self) -> None:
        """Load now what the first turn would otherwise load: spaCy, the query encoder, the logged openings' vectors,
        the domain profile.

        ``build_engine`` does this itself unless it is given ``warm=False``; ``dtdialog chat`` then runs it in
        a background thread while the first prompt waits for the user, and joins it before the first turn.
        """
        from dtdialog.ranking.learned_scorer import LearnedScorer

        _warm_parser(self.parser)
        if isinstance(self.selector.scorer, LearnedScorer):
            from dtdialog.ranking.factory import warm_up_scorer

            warm_up_scorer(self.selector.scorer)
        if self.selector.logged_questions is not None:
            self.selector.logged_questions.warm_up()
        if self.manager is not None and self.manager.scope is not None:
            self.manager.scope.warm_up()

    def close(self) -> None:
        """Close the session store and the index."""
        if self.store is not None:
            self.store.close()
        self.index.close()


@dataclass
class _Hooks:
    """What an evaluation hands ``build_engine`` beyond the spec (see ``build_engine``)."""

    encoder: Any = None
    wrap_scorer: Callable[[Any], Any] | None = None
    #: False: ``learned_ranking`` leaves the warm-up to ``Engine.warm_up`` (``build_engine(warm=False)``)
    warm: bool = True


def build_engine(spec: EngineSpec | None = None, *, progress: bool = True, parser: RSTParser | None = None,
                 index: AnswerIndex | None = None, index_path: str | Path | None = None, encoder=None,
                 wrap_scorer: Callable[[Any], Any] | None = None, warm: bool = True) -> Engine:
    """Return the ``Engine`` that ``spec`` describes; the only place where its parts are joined.

    * ``parser``: an already loaded ``RSTParser`` to use instead of loading ``spec.parser``.
    * ``index`` (with ``index_path``, its SQLite file, where the learned ranker keeps dense vectors): an
      already open index, e.g. an evaluation's pool index; the spec must then name no index or corpus.
    * ``encoder``: the dense query encoder (default: the one ``build_side_files`` encoded the answers with); it must
      make the same vectors as the index's, so an evaluation encoding them itself calls ``build_side_files`` first.
    * ``wrap_scorer``: called with the learned ranker's ``LearnedScorer``; what it returns scores instead
      (the evaluation's out-of-fold scorer and feature recorder).
    * ``warm=False``: leave the lazily loaded parts (spaCy, the query encoder, the domain profile) to
      ``Engine.warm_up`` or the first turn, so a caller can show its first prompt sooner.

    Raises ``ConfigError``/``InputError``/``ModelNotAvailableError`` with one-line messages.
    """
    spec = spec or EngineSpec()
    rst = parser if parser is not None else get_parser(engine_parser_name(spec.parser))
    given_index = index is not None
    if index is not None:
        if spec.index_path is not None or spec.corpus is not None:
            raise ConfigError("build_engine: give an open index or an index location in the spec, not both")
        path = Path(index_path) if index_path is not None else None
        location, built = str(path) if path is not None else getattr(index, "backend", ""), False
    else:
        index, path, location, built = ensure_index(spec, rst, progress=progress)
    hooks = _Hooks(encoder=encoder, wrap_scorer=wrap_scorer, warm=warm)
    try:
        profile = resolve_profile(path=spec.profile, info=index.info(),
                                  builtin=not given_index and spec.index_path is None and spec.corpus is None)
        model = learned_model(spec, index=index, index_path=path, warm=warm)
        side = build_side_files(spec, index, path, model=model, progress=progress)  # the index step, before the ranking
        selector, ranker = _selector(spec, parser=rst, index=index, index_path=path, side=side, hooks=hooks,
                                     progress=progress, profile=profile)
        store, manager = _manager(spec, selector, profile)
    except BaseException:
        index.close()
        raise
    engine = Engine(spec=spec, parser=rst, index=index, selector=selector, ranker=ranker, index_path=path,
                    index_location=location, built=built, store=store, manager=manager, profile=profile)
    if warm:
        engine.warm_up()
    return engine


def ensure_index(spec: EngineSpec, parser: RSTParser, *, progress: bool) -> tuple[AnswerIndex, Path | None, str, bool]:
    """Return ``(index, SQLite path or None, location, built)``: the spec's index opened, built first when missing
    or when the spec names a corpus (``dtdialog.setup.index_location.open_spec_index``); the learned ranker's side
    files beside it are the next step, ``build_side_files``. A corpus whose content is not the one a saved spec
    recorded raises ``InputError``."""
    from dtdialog.setup.index_location import open_spec_index
    from dtdialog.setup.spec_resolution import corpus_change

    problem = corpus_change(spec)
    if problem is not None:
        raise InputError(f"engine spec: {problem}")
    return open_spec_index(spec, parser, progress=progress)


@dataclass
class SideFiles:
    """The learned ranker ``model`` and the files beside its index ``build_side_files`` made ready (all None: the
    rule scorer)."""

    model: Any = None
    #: the encoder that made the answers' vectors, the query encoder too unless ``build_engine`` is given one
    encoder: Any = None
    #: the dense vectors beside a SQLite index (None over Elasticsearch, whose documents hold them)
    vectors: Any = None
    #: the answers' SG phrases (None when the model reads no ``sg`` feature)
    phrases: Any = None


def learned_model(spec: EngineSpec, *, index: AnswerIndex, index_path: Path | None, warm: bool = True):
    """Return the learned ranker's ``RankerModel`` the spec resolves to over ``index``, or None for the rule scorer.

    ``ConfigError``: learned-only options under the rules, a model reading tree features without the tree, a model
    other than ``ranker_version``, or rule-scorer options under it. ``warm=False`` defers unpickling the estimator.
    """
    from dtdialog.ranking.factory import learned_usable, load_model, resolve_ranker
    from dtdialog.ranking.features import DT_FEATURES

    name = resolve_ranker(spec.ranker)
    model = None
    if name != "rules" and learned_usable(name, index=index, index_path=index_path):
        model = load_model(name, spec.model_path(), deferred=not warm)
    if model is None:
        if spec.learned_options():
            raise ConfigError(f"engine spec: {spec.learned_options()[0]} has no effect under the rule scorer; "
                              "remove it or use --ranker learned")
        return None
    version = str(model.manifest.get("name") or "")
    tree_features = [n for n in model.feature_names if n in DT_FEATURES]
    if not spec.use_tree and tree_features:
        raise ConfigError(f"engine spec: the ranker model {version!r} reads discourse-tree features "
                          f"({', '.join(tree_features[:3])}, ...); without the tree use a 'hybrid' feature-set model")
    if spec.ranker_version is not None and version != spec.ranker_version:
        raise ConfigError(f"engine spec: the ranker model is {version!r}, the spec names {spec.ranker_version!r}")
    spec.config.check_ranker("learned")
    return model


def build_side_files(spec: EngineSpec, index: AnswerIndex, index_path: Path | None, *, model, progress: bool,
                     encoder=None) -> SideFiles:
    """Return the side files of the learned ranker ``model`` over ``index``, building what is missing or out of step
    first: the index step after ``ensure_index`` (``model`` None, the rule scorer: nothing to build).

    The answers' dense vectors (``dtdialog.ranking.factory.dense_vectors``) and, when the model reads the ``sg``
    feature, their SG phrases (``sg_phrases``), each with its progress bar. ``encoder`` encodes the answers (default:
    a ``DenseEncoder`` on ``spec.encoder_runtime``); an evaluation with an encoder of its own passes it here.
    """
    if model is None:
        return SideFiles()
    from dtdialog.ranking.factory import dense_vectors, sg_phrases
    from index.dense import DenseEncoder

    encoder = encoder or DenseEncoder(runtime=spec.encoder_runtime)
    vectors = dense_vectors(index, index_path, encoder=encoder, progress=progress)
    phrases = sg_phrases(index, index_path, progress=progress) if model.uses_sg else None
    return SideFiles(model=model, encoder=encoder, vectors=vectors, phrases=phrases)


def _selector(spec: EngineSpec, *, parser: RSTParser, index: AnswerIndex, index_path: Path | None, side: SideFiles,
              hooks: _Hooks, progress: bool, profile: Profile) -> tuple[AnswerSelector, str]:
    """Return ``(selector, resolved ranker)``: candidate generation and scoring as the spec's ranker asks, entity
    matching with the profile's synonyms (the default list when it names none)."""
    from dtdialog.ranking.logged_questions import logged_questions_for
    from dtdialog.understanding.entities import EntityNormalizer
    from dtdialog.understanding.sibling_parts import remember as remember_compounds

    generator, scorer = _ranking(spec, index=index, index_path=index_path, side=side, hooks=hooks, progress=progress)
    ranker = "rules" if scorer is None else "learned"
    normalizer = EntityNormalizer(synonyms=profile.synonyms) if profile.synonyms is not None else None
    config = spec.config
    if scorer is None and not spec.use_tree:  # no agreement was checked: the rule scorer must not weigh it
        config = replace(config, rules=replace(config.rules, agreement_weight=0.0, first_step_agreement_weight=0.0))
    logged = logged_questions_for(index, scorer) if config.abstention.logged_opening_at < 1.0 else None
    selector = AnswerSelector(index=index, parser=parser, config=config, generator=generator, scorer=scorer,
                              normalizer=normalizer, calibrator=engine_calibrator(spec, scorer),
                              stages=stage_set(spec.use_tree), logged_questions=logged)
    seed = getattr(getattr(scorer, "extractor", None), "seed_query", None)
    # the SG feature and the sibling-part check take the question's phrases from the RST parser's spaCy parse
    selector.question_analyzed = (*((seed,) if seed is not None else ()), remember_compounds)
    return selector, ranker


def _ranking(spec: EngineSpec, *, index: AnswerIndex, index_path: Path | None, side: SideFiles, hooks: _Hooks,
             progress: bool):
    """Return ``(generator, scorer)`` over the side files ``build_side_files`` made ready, which it only loads;
    ``(None, None)`` (no learned model) is the selector's lexical generator and ``RuleScorer``."""
    from dtdialog.ranking.factory import learned_ranking

    if side.model is None:
        return None, None
    encoder = hooks.encoder or side.encoder
    if hooks.encoder is not None and side.vectors is not None:
        from index.dense_store import encoder_id

        if encoder_id(encoder) != side.vectors.model:  # cosines between two encoders' vectors mean nothing
            raise ConfigError(f"build_engine: the query encoder makes {encoder_id(encoder)!r} vectors, the index's "
                              f"are {side.vectors.model!r}; build its side files with it first (build_side_files)")
    generator, scorer = learned_ranking(index=index, index_path=index_path, model=side.model, config=spec.config,
                                        depth=spec.candidate_depth, encoder=encoder,
                                        require_agreement=spec.learned_require_agreement, progress=progress,
                                        warm=hooks.warm, store=side.vectors, sg_store=side.phrases)
    if hooks.wrap_scorer is not None:
        scorer = hooks.wrap_scorer(scorer)
    return generator, scorer


def _manager(spec: EngineSpec, selector: AnswerSelector, profile: Profile):
    """Return ``(session store, DialogueManager)`` over ``spec.sessions_path``, speaking ``profile``'s wording, or
    ``(None, None)`` without a session store."""
    if spec.sessions_path is None:
        return None, None
    from dtdialog.dialogue.manager import DialogueManager
    from dtdialog.dialogue.session_store import SessionStore

    path = Path(spec.sessions_path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    store = SessionStore(path)
    # out-of-scope gate: learns the domain from the selector's own index, and from the profile's glossary where an
    # encoder reads meaning too (the rule scorer's calibrator cannot tell a near-miss answer from a right one, so
    # under it the gate keeps to the index's own words)
    from dtdialog.understanding.scope import ScopeGate

    nearest, prefetch = _nearest_domain_cosine(selector, profile.glossary)
    options = spec.config.scope
    scope = ScopeGate(selector.index, quantile=options.scope_quantile, threshold=options.scope_threshold,
                      mass=options.scope_mass, dense=nearest, prefetch=prefetch,
                      dense_floor=options.scope_dense_floor, dense_sure=options.scope_dense_sure,
                      glossary=profile.glossary if nearest is not None else ())
    from dtdialog.dialogue.abstain import load_followup_calibrator

    return store, DialogueManager(selector=selector, store=store, config=spec.config, scope=scope,
                                  calibrator=selector.calibrator, replies=profile.replies(),
                                  followup_calibrator=load_followup_calibrator(selector.calibrator))


def _nearest_domain_cosine(selector: AnswerSelector, glossary: tuple[str, ...]):
    """Return ``(text -> largest cosine to a stored answer or a glossary entry, text -> start encoding it on a
    worker)`` from the learned ranker's dense signals, or ``(None, None)``."""
    from dtdialog.ranking.learned_scorer import LearnedScorer
    from dtdialog.runtime.paths import data_home
    from dtdialog.understanding.glossary_vectors import nearest_domain_cosine

    if not isinstance(selector.scorer, LearnedScorer) or selector.scorer.extractor.dense is None:
        return None, None
    dense = selector.scorer.extractor.dense
    nearest = nearest_domain_cosine(dense, glossary, cache_dir=data_home())
    return nearest, dense.prefetch


# --- calibrated confidence: the calibrator that matches the engine's ranker ---
def engine_calibrator(spec: EngineSpec, scorer):
    """Return the ``Calibrator`` for the ranker (``scorer`` None: the rule scorer): the spec's own ``calibrator`` file,
    else the shipped one; None when there is none. A named file that is missing, unreadable or fitted for another
    ranker or model raises a one-line error: a team that fitted one must not silently get the shipped confidences."""
    from dtdialog.selection.confidence import Calibrator, load_calibrator

    model = getattr(scorer, "model", None)
    ranker, name = ("rules", "") if model is None else ("learned", str(model.manifest.get("name", "")))
    if spec.calibrator is None:
        return load_calibrator(ranker, model_name=name, model_path=spec.model_path() if model is not None else None)
    calibrator = Calibrator.load(spec.calibrator)
    fitted, running = f"{calibrator.ranker} {calibrator.model_name}".strip(), f"{ranker} {name}".strip()
    if fitted != running:
        raise ConfigError(f"calibrator {spec.calibrator} was fitted for the {fitted} ranker, the engine runs the "
                          f"{running} ranker; refit it (python -m eval.calibrate --data FILE --rankers {ranker}) or "
                          "drop --calibrator")
    return calibrator


def _warm_parser(parser: RSTParser) -> None:
    """Load the parser's NLP pipeline now (it loads lazily), not in the first user's turn."""
    try:
        parser.parse("The order arrived.")
    except DTDialogError:  # warming is an optimisation; a real problem surfaces, with its message, on the first turn
        pass
