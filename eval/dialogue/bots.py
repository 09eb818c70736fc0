"""The bots the simulated customer talks to: the real ``DialogueManager`` and the next-result baselines.

``EngineBot`` drives the engine ``dtdialog chat`` builds (``dtdialog.setup.assembly.build_engine``) over a temporary
index of the pool, with a session store, through the manager's public API only. On the ranker's training pool
(mechanics) each question is scored by the fold model that did not train on it (``eval.out_of_fold``).

``NextResultBot`` is a search box with a "next" button: each customer message gets the best result not shown yet,
searched with the customer's messages so far (the simulator's fixed phrases left out: they describe nothing).
It never clarifies or hands off.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from eval.datasets import EvalDialogue, PoolAnswer
from eval.dialogue.customer import FIXED_PHRASES, BotTurn, Option

BOTS = ("dtq", "dense", "bm25", "dtq-no-dt")
#: the bots a run talks to unless told otherwise
DEFAULT_BOTS = ("dtq", "dense", "bm25")
#: the bots that are the engine: with the discourse tree, and the same engine without it (``EngineSpec.use_tree``)
ENGINE_BOTS = ("dtq", "dtq-no-dt")


def open_pool(pool: Sequence[PoolAnswer], hidden: frozenset[str]) -> tuple[PoolAnswer, ...]:
    """Return ``pool`` without the ``hidden`` answers (the open pool's gold answers)."""
    return tuple(a for a in pool if a.id not in hidden)


class EngineBot:
    """``dtq``: the dialogue manager of an engine built over ``pool``; ``dtq-no-dt`` the same without the tree."""

    def __init__(self, pool: Sequence[PoolAnswer], *, ranker: str | None = None, progress: bool = False,
                 use_tree: bool = True, parser: str | None = None, openings: Mapping[str, str] | None = None,
                 calibrator: str | None = None) -> None:
        self.name = "dtq" if use_tree else "dtq-no-dt"
        self._tmp = tempfile.TemporaryDirectory(prefix="dtdialog-dialogue-eval-")
        self.engine = build_pool_engine(pool, sessions_path=Path(self._tmp.name) / "sessions.sqlite",
                                        ranker=ranker, progress=progress, use_tree=use_tree, parser=parser,
                                        openings=openings, calibrator=calibrator)
        self.manager = self.engine.manager
        replies = self.manager.replies
        # a greeting is recognised by its first words: the profile's wording may add to the end
        self._greetings = tuple(g[:30] for g in (replies.greeting, getattr(replies, "out_of_scope_greeting", "")) if g)
        self._session = ""

    @property
    def ranker(self) -> str:
        return self.engine.ranker

    def parts(self, question: str) -> int:
        """Return how many parts the engine plans ``question`` in (DT-Q's non-default issues; 1 when unplannable)."""
        from parsers.errors import InputError

        try:
            return len(self.engine.selector.plan(question).parts)
        except InputError:
            return 1

    def start(self, dialogue: EvalDialogue) -> None:
        self._session = self.manager.start_session()

    def send(self, text: str) -> BotTurn:
        r = self.manager.handle(session_id=self._session, text=text)
        options = tuple(Option(number=o.number, label=o.label, answer_id=o.answer_id or "") for o in r.options or ())
        return BotTurn(kind=str(r.kind), reply=r.reply, answer_id=r.answer_id or None, options=options,
                       state=str(r.state), greeting=r.reply.strip().startswith(self._greetings))

    def close(self) -> None:
        self.engine.close()
        self._tmp.cleanup()


def build_pool_engine(pool: Sequence[PoolAnswer], *, sessions_path: Path, ranker: str | None = None,
                      progress: bool = False, use_tree: bool = True, parser: str | None = None,
                      openings: Mapping[str, str] | None = None, calibrator: str | None = None):
    """Return the engine ``dtdialog chat`` builds, over a temporary index of ``pool``, with a session store
    (``parser``: the RST parser's name, default the engine's; ``openings``: each dialogue's first message -> its whole
    question, so an opening of a training question is scored out of fold too, ``eval.out_of_fold.with_openings``;
    ``calibrator``: a calibrator file of one's own, ``EngineSpec.calibrator``)."""
    from dtdialog.setup.assembly import EngineSpec, build_engine, engine_parser_name
    from eval.methods.pool_index import pool_index, seed_dense_store
    from eval.out_of_fold import out_of_fold
    from index.registry import open_index
    from parsers.base import get_parser

    rst = get_parser(engine_parser_name(parser))
    path, _ = pool_index(pool, parser=rst, progress=progress)
    spec = EngineSpec(ranker=ranker, sessions_path=str(sessions_path), use_tree=use_tree, calibrator=calibrator)
    index = open_index(backend="sqlite", path=path)
    if ranker != "rules":  # the pool's vectors from the cross-run cache, before the engine would encode them
        seed_dense_store(index, path, progress=progress)
    return build_engine(spec, progress=progress, parser=rst, index=index, index_path=path,
                        wrap_scorer=out_of_fold(spec.model_path(), openings=openings))


class NextResultBot:
    """``dense`` or ``bm25``: shows the next best result not shown yet; ``hidden`` answers are never shown."""

    def __init__(self, name: str, pool: Sequence[PoolAnswer], *, progress: bool = False) -> None:
        from eval.methods import get_method

        self.name = name
        self.method = get_method("dense" if name == "dense" else "keyword")
        if hasattr(self.method, "progress"):
            self.method.progress = progress
        self.method.fit(pool=pool)
        self._texts = {a.id: a.text for a in pool}
        self.hidden: frozenset[str] = frozenset()
        self._said: list[str] = []
        self._shown: list[str] = []

    def start(self, dialogue: EvalDialogue) -> None:
        self._said, self._shown = [], []

    def send(self, text: str) -> BotTurn:
        if text not in FIXED_PHRASES:
            self._said.append(text)
        ranked = self.method.rank(question="\n".join(self._said), followups=(), step=0,
                                  exclude_ids=(*self._shown, *self.hidden), k=1)
        if not ranked:
            return BotTurn(kind="fallback", reply="(no more results)")
        answer_id = ranked[0][0]
        self._shown.append(answer_id)
        return BotTurn(kind="answer", reply=self._texts.get(answer_id, answer_id), answer_id=answer_id)

    def close(self) -> None:
        self.method.close()
