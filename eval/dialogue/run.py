"""Runs every bot on every dialogue of a set, in the closed pool and in the open pool, and summarises them."""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from eval.datasets import EvalSet
from eval.dialogue.bots import ENGINE_BOTS, EngineBot, NextResultBot, open_pool
from eval.dialogue.customer import Bot, Session, play
from eval.dialogue.metrics import (
    later_steps_paired,
    later_steps_success,
    paired_difference,
    per_step_paired,
    ratio,
    success_at,
    summarise,
    zero_count_examples,
    zero_counts,
)
from eval.methods.base import MethodUnavailable
from eval.open_pool import open_pool_coin
from parsers.errors import DTDialogError, ModelNotAvailableError

POOLS = ("closed", "open")


@dataclass
class SetRun:
    """The sessions of one set: ``sessions[pool][bot]``, and what the run used."""

    name: str
    n_dialogues: int
    n_pool: int
    n_open_pool: int
    gold_absent: int
    description: str = ""
    sessions: dict[str, dict[str, list[Session]]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    ranker: str = ""
    #: dialogue id -> the parts the engine with the tree plans its question in (DT-Q), when ``dtq`` ran
    parts: dict[str, int] = field(default_factory=dict)


def hidden_golds(eval_set: EvalSet, removed: frozenset[str]) -> frozenset[str]:
    """Return every gold answer of the dialogues the coin removed (all their steps)."""
    return frozenset(a for d in eval_set.dialogues if d.id in removed for a in d.answer_ids)


def make_bot(name: str, eval_set: EvalSet, *, hidden: frozenset[str], ranker: str | None,
             progress: bool, parser: str | None = None, calibrator: str | None = None) -> EngineBot | NextResultBot:
    """Return bot ``name`` over the set's pool without ``hidden`` (``ranker``, ``parser``, ``calibrator``: the engine
    bots')."""
    if name in ENGINE_BOTS:
        return EngineBot(open_pool(eval_set.pool, hidden), ranker=ranker, progress=progress, use_tree=name == "dtq",
                         parser=parser, openings=openings_of(eval_set), calibrator=calibrator)
    bot = NextResultBot(name, eval_set.pool, progress=progress)
    bot.hidden = hidden  # the same pool minus the hidden answers, without encoding it again
    return bot


def openings_of(eval_set: EvalSet) -> dict[str, str]:
    """Return each dialogue's first message -> its whole question, where the customer opens with less (a title)."""
    out = {}
    for d in eval_set.dialogues:
        opening, body = d.opening_and_body()
        if body:
            out.setdefault(opening, d.question)
    return out


def play_all(bot: Bot, eval_set: EvalSet, *, removed: frozenset[str], pool: str, seed: int,
             progress: bool) -> list[Session]:
    from tqdm import tqdm

    sessions = []
    for d in tqdm(eval_set.dialogues, desc=f"{eval_set.name}/{pool}/{bot.name}", unit="session", file=sys.stderr,
                  disable=not progress, dynamic_ncols=True):
        gold_present = pool == "closed" or d.id not in removed
        sessions.append(play(bot, d, seed=seed, gold_present=gold_present))
    return sessions


def run_set(eval_set: EvalSet, bots: Sequence[str], *, seed: int, ranker: str | None, progress: bool,
            parser: str | None = None, calibrator: str | None = None) -> SetRun:
    """Play every dialogue of ``eval_set`` with every bot in both pools."""
    removed = open_pool_coin([d.id for d in eval_set.dialogues], seed=seed)
    hidden = hidden_golds(eval_set, removed)
    run = SetRun(name=eval_set.name, n_dialogues=len(eval_set.dialogues), n_pool=len(eval_set.pool),
                 n_open_pool=len(eval_set.pool) - len(hidden & {a.id for a in eval_set.pool}),
                 gold_absent=len(removed), description=eval_set.description)
    for pool in POOLS:
        run.sessions[pool] = {}
        for name in bots:
            if name in run.skipped:
                continue
            start = time.perf_counter()
            try:
                bot = make_bot(name, eval_set, hidden=hidden if pool == "open" else frozenset(), ranker=ranker,
                               progress=progress, parser=parser, calibrator=calibrator)
            except (ModelNotAvailableError, MethodUnavailable, DTDialogError, ImportError) as exc:
                run.skipped[name] = str(exc)
                print(f"{eval_set.name}/{name}: skipped: {exc}", file=sys.stderr)
                continue
            try:
                if name == "dtq":
                    run.ranker = bot.ranker
                    run.parts = run.parts or {d.id: bot.parts(d.question) for d in eval_set.dialogues}
                run.sessions[pool][name] = play_all(bot, eval_set, removed=removed, pool=pool, seed=seed,
                                                    progress=progress)
            finally:
                bot.close()
            run.seconds[f"{pool}/{name}"] = round(time.perf_counter() - start, 1)
    return run


def summary(run: SetRun, *, n_resamples: int, seed: int) -> dict:
    """Return the measures of ``run`` per pool and bot, the zero counts, and the paired dtq - anchor differences."""
    out: dict = {"dataset": run.name, "description": run.description, "n_dialogues": run.n_dialogues,
                 "n_pool": run.n_pool, "n_open_pool": run.n_open_pool, "gold_absent_open_pool": run.gold_absent,
                 "ranker": run.ranker, "seconds": run.seconds, "skipped": run.skipped, "pools": {}}
    for pool, by_bot in run.sessions.items():
        pool_out = out["pools"][pool] = {}
        for name, sessions in by_bot.items():
            pool_out[name] = {"measures": summarise(sessions, n_resamples=n_resamples, seed=seed),
                              "zero_counts": zero_counts(sessions),
                              "zero_count_examples": zero_count_examples(sessions)}
        if pool == "open":
            _against_closed(pool_out, by_bot, run.sessions.get("closed", {}), n_resamples=n_resamples, seed=seed)
        if "dtq" not in by_bot:
            continue
        for anchor in ("dense", "bm25", "dtq-no-dt"):
            if anchor in by_bot:
                pool_out["dtq"][f"vs_{anchor}"] = {
                    **paired_difference(by_bot["dtq"], by_bot[anchor], n_resamples=n_resamples, seed=seed),
                    **per_step_paired(by_bot["dtq"], by_bot[anchor], n_resamples=n_resamples, seed=seed)}
        if "dtq-no-dt" in by_bot and run.parts:
            out.setdefault("multi_part", {})[pool] = multi_part(by_bot, run.parts, n_resamples=n_resamples, seed=seed)
    return out


def multi_part(by_bot: dict[str, list[Session]], parts: dict[str, int], *, n_resamples: int, seed: int) -> dict:
    """Return, on the sessions whose question DT-Q plans in 2 or more parts, success@3 at every step and over the
    steps after the first (the engine answers part i at step i), session success and wrong answers per session of
    the engine with and without the tree, and their paired differences."""
    ids = {did for did, n in parts.items() if n >= 2}
    subset = {name: [s for s in by_bot[name] if s.dialogue_id in ids] for name in ENGINE_BOTS}
    boot = {"n_resamples": n_resamples, "seed": seed}
    out: dict = {"n": len(subset["dtq"])}
    for name, sessions in subset.items():
        ones = [1.0] * len(sessions)
        steps = range(max((s.n_steps for s in sessions), default=1))
        out[name] = {**{f"step{i + 1}_success@3": success_at(sessions, step=i, k=3, **boot).to_dict() for i in steps},
                     "later_steps_success@3": later_steps_success(sessions, **boot).to_dict(),
                     "session_success": ratio("every step succeeded", [float(s.succeeded) for s in sessions], ones,
                                              **boot).to_dict(),
                     "wrong_per_session": ratio("wrong answers per session", [s.wrong_answers for s in sessions],
                                                ones, **boot).to_dict()}
    dtq, flat = subset["dtq"], subset["dtq-no-dt"]
    out["dtq_minus_no_dt"] = {**paired_difference(dtq, flat, **boot), **per_step_paired(dtq, flat, **boot),
                              "later_steps_success@3": later_steps_paired(dtq, flat, **boot)}
    return out


def _against_closed(pool_out: dict, open_by_bot: dict[str, list[Session]], closed_by_bot: dict[str, list[Session]],
                    *, n_resamples: int, seed: int) -> None:
    """Add each bot's closed-pool step-1 success@3 on the open pool's gold-present dialogues, and open - closed."""
    for name, sessions in open_by_bot.items():
        present = [s for s in sessions if s.gold_present]
        ids = {s.dialogue_id for s in present}
        closed = [s for s in closed_by_bot.get(name, ()) if s.dialogue_id in ids]
        if not present or not closed:
            continue
        measures = pool_out[name]["measures"]
        measures["step1_success@3_gold_present_closed_pool"] = success_at(closed, step=0, k=3, n_resamples=n_resamples,
                                                                          seed=seed).to_dict()
        diff = paired_difference(present, closed, n_resamples=n_resamples, seed=seed)["step1_success@3"]
        measures["step1_success@3_gold_present_open_minus_closed"] = diff


def transcript_sample(run: SetRun, n: int, *, seed: int) -> list[str]:
    """Return the seeded sample of dialogue ids whose sessions are written out (the same ids in both pools)."""
    ids = sorted({s.dialogue_id for by_bot in run.sessions.values() for ss in by_bot.values() for s in ss})
    return sorted(random.Random(f"transcripts:{seed}:{run.name}").sample(ids, min(n, len(ids))))
