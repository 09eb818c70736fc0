"""What the simulated sessions measure, each with a seeded 95% bootstrap CI over sessions (``eval.metrics``).

success@k of step i: step i (0-based) succeeded within k bot turns of that step, over every session whose
dialogue has a step i (a step never reached counts as failed). Wrong answers: answers shown that were not the
current step's gold answer. Turns to success: bot turns of the sessions that succeeded at every step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from eval.dialogue.customer import BUDGET, Session
from eval.metrics import MetricValue, bootstrap_ratio

KS = tuple(range(1, BUDGET + 1))


def ratio(name: str, num: Sequence[float], den: Sequence[float], *, n_resamples: int, seed: int) -> MetricValue:
    """Return ``sum(num) / sum(den)`` over sessions with ``den > 0``, with its bootstrap CI."""
    value, low, high = bootstrap_ratio(num, den, n_resamples=n_resamples, seed=seed)
    return MetricValue(name=name, value=value, low=low, high=high, n=sum(1 for d in den if d > 0))


def success_at(sessions: Sequence[Session], *, step: int, k: int, n_resamples: int = 1000,
               seed: int = 13) -> MetricValue:
    return ratio(f"step {step + 1} success@{k}", [float(s.success_at(step, k)) for s in sessions],
                 [float(s.n_steps > step) for s in sessions], n_resamples=n_resamples, seed=seed)


def summarise(sessions: Sequence[Session], *, n_resamples: int = 1000, seed: int = 13) -> dict[str, dict]:
    """Return every measure of one bot's sessions in one pool, by name (``MetricValue.to_dict``)."""
    boot = {"n_resamples": n_resamples, "seed": seed}
    ones = [1.0] * len(sessions)
    out: dict[str, MetricValue] = {}
    for step in range(max((s.n_steps for s in sessions), default=0)):
        for k in KS:
            out[f"step{step + 1}_success@{k}"] = success_at(sessions, step=step, k=k, **boot)
    out["wrong_per_session"] = ratio("wrong answers per session", [s.wrong_answers for s in sessions], ones, **boot)
    out["handoff_rate"] = ratio("hand-off rate", [float(s.handed_off) for s in sessions], ones, **boot)
    out["turns_to_success"] = ratio("bot turns to success", [float(s.bot_turns) for s in sessions],
                                    [float(s.succeeded) for s in sessions], **boot)
    out["session_success"] = ratio("every step succeeded", [float(s.succeeded) for s in sessions], ones, **boot)
    absent = [s for s in sessions if not s.gold_present]
    if absent:
        out["honest_end_gold_absent"] = ratio("gold-absent sessions ending honestly",
                                              [float(s.honest_end()) for s in absent], [1.0] * len(absent), **boot)
        present = [s for s in sessions if s.gold_present]
        out["step1_success@3_gold_present"] = success_at(present, step=0, k=3, **boot)
    return {name: m.to_dict() for name, m in out.items()}


def zero_counts(sessions: Sequence[Session]) -> dict[str, int]:
    """Return the counts the manager should bring to zero."""
    return {"greetings_after_handoff": sum(s.greeting_after_handoff for s in sessions),
            "false_handoff_reasons": sum(bool(s.false_handoff_reason) for s in sessions),
            "misrouted_first_messages": sum(s.misrouted_first for s in sessions)}


def zero_count_examples(sessions: Sequence[Session], *, most: int = 5) -> dict[str, list[str]]:
    """Return up to ``most`` dialogue ids behind each zero count (the false reason spelled out), to look them up."""
    return {"greetings_after_handoff": [s.dialogue_id for s in sessions if s.greeting_after_handoff][:most],
            "false_handoff_reasons": [f"{s.dialogue_id}: {s.false_handoff_reason}" for s in sessions
                                      if s.false_handoff_reason][:most],
            "misrouted_first_messages": [s.dialogue_id for s in sessions if s.misrouted_first][:most]}


#: the per-session values the paired differences compare
PAIRED: dict[str, Callable[[Session], float]] = {
    "step1_success@3": lambda s: float(s.success_at(0, 3)),
    "step1_success@1": lambda s: float(s.success_at(0, 1)),
    "wrong_per_session": lambda s: float(s.wrong_answers),
}


def paired_sessions(a: Sequence[Session], b: Sequence[Session]) -> list[tuple[Session, Session]]:
    """Return the sessions of ``a`` with ``b``'s session of the same dialogue (dialogues ``b`` lacks are left out)."""
    by_id = {s.dialogue_id: s for s in b}
    return [(s, by_id[s.dialogue_id]) for s in a if s.dialogue_id in by_id]


def paired_difference(a: Sequence[Session], b: Sequence[Session], *, n_resamples: int = 1000,
                      seed: int = 13) -> dict[str, dict]:
    """Return mean(a) - mean(b) of each ``PAIRED`` value with a paired bootstrap CI over the same dialogues."""
    pairs = paired_sessions(a, b)
    ones = [1.0] * len(pairs)
    return {name: ratio(f"{name} difference", [value(x) - value(y) for x, y in pairs], ones,
                        n_resamples=n_resamples, seed=seed).to_dict()
            for name, value in PAIRED.items()}


def later_steps(session: Session, k: int = 3) -> tuple[float, float]:
    """Return (steps after the first that succeeded within ``k`` bot turns, steps after the first) of ``session``."""
    later = range(1, session.n_steps)
    return float(sum(session.success_at(step, k) for step in later)), float(len(later))


def later_steps_success(sessions: Sequence[Session], *, k: int = 3, n_resamples: int = 1000,
                        seed: int = 13) -> MetricValue:
    """Return success@``k`` pooled over every step after the first (over sessions whose dialogue has one)."""
    counts = [later_steps(s, k) for s in sessions]
    return ratio(f"later steps success@{k}", [n for n, _ in counts], [d for _, d in counts], n_resamples=n_resamples,
                 seed=seed)


def later_steps_paired(a: Sequence[Session], b: Sequence[Session], *, k: int = 3, n_resamples: int = 1000,
                       seed: int = 13) -> dict:
    """Return the paired difference of later-step success@``k`` (pooled steps after the first) over the same dialogues."""
    pairs = [(later_steps(x, k), later_steps(y, k)) for x, y in paired_sessions(a, b)]
    return ratio(f"later steps success@{k} difference", [x[0] - y[0] for x, y in pairs], [x[1] for x, _ in pairs],
                 n_resamples=n_resamples, seed=seed).to_dict()


def per_step_paired(a: Sequence[Session], b: Sequence[Session], *, k: int = 3, n_resamples: int = 1000,
                    seed: int = 13) -> dict[str, dict]:
    """Return the paired difference of success@``k`` at every step index (over dialogues that have the step)."""
    pairs = paired_sessions(a, b)
    out = {}
    for step in range(max((s.n_steps for s in a), default=0)):
        out[f"step{step + 1}_success@{k}"] = ratio(
            f"step {step + 1} success@{k} difference",
            [float(x.success_at(step, k)) - float(y.success_at(step, k)) for x, y in pairs],
            [float(x.n_steps > step) for x, _ in pairs], n_resamples=n_resamples, seed=seed).to_dict()
    return out
