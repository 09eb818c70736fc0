"""Fit the logged-opening model and check it on real posts: ``python -m eval.logged_question``.

``dtdialog.ranking.logged_questions.LoggedQuestionModel`` gives the probability that the first answer of the dialogue
whose logged opening is nearest a customer's first message is right, from the cosine, the gap to the next dialogue's
opening and the share of the message's terms the opening uses. Real "the same question in other words" pairs come
from the car-repair Q/A set: each question's title (what a chat user types first) against every question's body (the
logged openings), with a seeded coin removing the own body for half of the titles (``eval.open_pool.open_pool_coin``),
so "no logged opening is this question" is in the data. A 5-fold cross-fit by question gives held-out AUC, ECE and,
at ``AbstentionConfig.logged_opening_at``, how many titles the evidence would count for and how many of those match
their own question.

Then the check that matters to a customer: on the judged posts (``--judged``, real forum posts of the Reddit half the
coverage test never uses, each judged by reading against the first answer of its nearest built-in opening), how many
reach the bar, and how many of those were judged right; and the probabilities of the paper's question and of a
paraphrase. Writes the model to ``--models-dir`` and ``logged_question.json`` / ``.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dtdialog.ranking.logged_questions import (
    FEATURES,
    MODEL_PATH,
    LoggedQuestionModel,
    encoder_family,
    nearest_of,
    term_coverage,
)
from dtdialog.setup.engine_config import AbstentionConfig
from eval.calibrator import ece, fold_of
from eval.datasets import REPO_ROOT, default_data_dir, load_eval_set, reddit_questions
from eval.entry import one_line_errors
from eval.open_pool import open_pool_coin
from eval.provenance import git_commit
from parsers.errors import InputError
from parsers.files import atomic_write_text, check_out_dir

DEFAULT_OUT = Path("runs") / "logged_question"
JUDGED = REPO_ROOT / "eval" / "coverage" / "judged_logged_openings.jsonl"
#: The paper's question and the same question in another customer's words (``tests/dtdialog/test_paper_question.py``)
PAPER = ("I have checked the spark plugs, replaced the battery, also replaced ignition coils and the solenoid, "
         "but I still could not start my car.",
         "I have checked the battery, replaced the coils and the spark plugs, and tested the solenoid, "
         "but my car still won't start.")


@dataclass(frozen=True)
class MatchRow:
    """One message against the logged openings: its nearest opening's numbers, and whether it is the own one."""

    key: str
    values: tuple[float, float, float]
    own: bool
    #: the row of the nearest opening
    nearest: int = -1


def match_rows(keys: Sequence[str], messages: np.ndarray, message_terms: Sequence[frozenset[str]],
               openings: np.ndarray, opening_terms: Sequence[frozenset[str]], *,
               removed: frozenset[str] = frozenset(), own: Sequence[int | None] | None = None) -> list[MatchRow]:
    """Return the row of each message (unit vectors in ``messages``) against ``openings``; ``own[i]`` is message i's
    own opening (None: none), left out when ``keys[i]`` is in ``removed``."""
    rows = []
    for i, key in enumerate(keys):
        cosines = openings @ messages[i]
        mine = own[i] if own is not None else None
        if mine is not None and key in removed:
            cosines[mine] = -np.inf
        top, cosine, gap = nearest_of(cosines)
        values = (cosine, gap, term_coverage(message_terms[i], opening_terms[top]))
        rows.append(MatchRow(key=key, values=values, own=mine is not None and top == mine, nearest=top))
    return rows


def fit_model(rows: Sequence[MatchRow], *, encoder: str, manifest: dict | None = None) -> LoggedQuestionModel:
    """Return the logistic model of ``own`` on the rows' values (both outcomes needed)."""
    from sklearn.linear_model import LogisticRegression

    X = np.array([r.values for r in rows], dtype=float).reshape(len(rows), len(FEATURES))
    y = np.array([r.own for r in rows])
    if len(rows) < 4 or y.all() or not y.any():
        raise InputError("the logged-question model needs messages both with and without their own opening")
    model = LogisticRegression(max_iter=1000).fit(X, y)
    return LoggedQuestionModel(coef=tuple(float(c) for c in model.coef_[0]), intercept=float(model.intercept_[0]),
                               encoder=encoder, lows=tuple(float(v) for v in X.min(axis=0)),
                               highs=tuple(float(v) for v in X.max(axis=0)), manifest=dict(manifest or {}))


def cross_fit(rows: Sequence[MatchRow], folds: Sequence[int], *, encoder: str) -> list[float]:
    """Return each row's probability from a model fitted on the other folds."""
    out = [0.0] * len(rows)
    for fold in sorted(set(folds)):
        model = fit_model([r for r, f in zip(rows, folds) if f != fold], encoder=encoder)
        for i, (r, f) in enumerate(zip(rows, folds)):
            if f == fold:
                out[i] = model.probability(*r.values)
    return out


def _auc(probs: Sequence[float], labels: Sequence[bool]) -> float | None:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, probs)) if 0 < sum(labels) < len(labels) else None


def read_judged(path: Path) -> list[dict]:
    """Return the judged posts of ``path`` (id, dialogue, asks_help, verdict), or a one-line error."""
    if not path.is_file():
        raise InputError(f"no judged posts at {path}")
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if row["verdict"] not in ("right", "partial", "wrong") or not isinstance(row["asks_help"], bool):
                raise ValueError("verdict must be right, partial or wrong and asks_help true or false")
            out.append({k: row[k] for k in ("id", "dialogue", "asks_help", "verdict")})
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path}:{number}: {exc}") from None
    return out


def run(args: argparse.Namespace, *, command: str) -> int:
    from data.builtin import load_builtin_corpus
    from dtdialog.understanding.entities import EntityNormalizer
    from index.dense import DenseEncoder
    from index.dense_store import encoder_id

    out = check_out_dir(args.out)
    bar = AbstentionConfig().logged_opening_at
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    mechanics = load_eval_set("mechanics", data_dir=data_dir)
    judged = read_judged(Path(args.judged))
    posts = reddit_questions(data_dir)
    encoder, terms = DenseEncoder(), EntityNormalizer().terms_of_text
    family = encoder_family(encoder_id(encoder))
    pairs = [(d.id, *d.opening_and_body()) for d in mechanics.dialogues]
    pairs = [(key, title, body) for key, title, body in pairs if title.strip() and body.strip()]
    titles = encoder.encode([t for _, t, _ in pairs], progress=not args.no_progress)
    bodies = encoder.encode([b for _, _, b in pairs], progress=not args.no_progress)
    removed = open_pool_coin([k for k, _, _ in pairs], seed=args.seed)
    rows = match_rows([k for k, _, _ in pairs], titles, [terms(t) for _, t, _ in pairs], bodies,
                      [terms(b) for _, _, b in pairs], removed=removed, own=list(range(len(pairs))))
    folds = [fold_of(title) for _, title, _ in pairs]
    held = cross_fit(rows, folds, encoder=family)
    labels = [r.own for r in rows]
    counted = [i for i, p in enumerate(held) if p >= bar]
    model = fit_model(rows, encoder=family, manifest={
        "fitted_on": f"mechanics titles against bodies, own body removed for {len(removed & {k for k, _, _ in pairs})}"
                     f" of {len(pairs)} (seed {args.seed})", "command": command, "n": len(rows),
        "held_out_auc": _auc(held, labels), "held_out_ece": round(ece(held, labels), 4), "commit": git_commit()})

    dialogues = {d.id: d for d in load_builtin_corpus()}
    ids = list(dialogues)
    openings = encoder.encode([dialogues[i].question for i in ids])
    opening_terms = [terms(dialogues[i].question) for i in ids]
    checked = [j for j in judged if j["id"] in posts]
    if len(checked) < len(judged):
        raise InputError(f"{len(judged) - len(checked)} judged posts are not in the shared Reddit files under {data_dir}")
    post_rows = match_rows([j["id"] for j in checked], encoder.encode([posts[j["id"]] for j in checked]),
                           [terms(posts[j["id"]]) for j in checked], openings, opening_terms)
    post_probs = [model.probability(*r.values) for r in post_rows]
    asking = [(p, j) for p, j in zip(post_probs, checked) if j["asks_help"]]
    paper_rows = match_rows(["paper", "paraphrase"], encoder.encode(list(PAPER)), [terms(t) for t in PAPER],
                            openings, opening_terms)
    report = {
        "command": command, "commit": git_commit(), "encoder": encoder_id(encoder), "bar": bar,
        "model": model.to_dict(),
        "mechanics": {"titles": len(rows), "own_removed": sum(r.key in removed for r in rows),
                      "own_nearest": sum(labels), "held_out_auc": _auc(held, labels),
                      "held_out_ece": round(ece(held, labels), 4), "counted": len(counted),
                      "counted_own": sum(labels[i] for i in counted)},
        "judged_posts": {"n": len(asking), "right": sum(j["verdict"] == "right" for _, j in asking),
                         "mean_probability": round(float(np.mean([p for p, _ in asking])), 4) if asking else None,
                         "max_probability": round(max((p for p, _ in asking), default=0.0), 4),
                         "counted": sum(p >= bar for p, _ in asking),
                         "counted_right": sum(p >= bar and j["verdict"] == "right" for p, j in asking)},
        "paper": {name: {"dialogue": ids[r.nearest], "values": [round(v, 4) for v in r.values],
                         "probability": round(model.probability(*r.values), 4)}
                  for name, r in zip(("paper", "paraphrase"), paper_rows)},
    }
    model.save(Path(args.models_dir) / MODEL_PATH.name)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "logged_question.json", json.dumps(report, indent=2) + "\n")
    atomic_write_text(out / "logged_question.md", render(report))
    print(render(report), end="")
    return 0


def _pct(num: int, den: int) -> str:
    return f"{num} of {den} ({100 * num / den:.1f}%)" if den else "0 of 0"


def render(report: dict) -> str:
    """Return the report as Markdown."""
    m, j, bar = report["mechanics"], report["judged_posts"], report["bar"]
    auc = f"{m['held_out_auc']:.3f}" if m["held_out_auc"] is not None else "n/a"
    lines = ["# The logged-opening evidence", "", f"Command: `{report['command']}`", "",
             f"Commit {report['commit']}; encoder {report['encoder']}; the evidence counts from {bar:.2f}.", "",
             f"**Mechanics titles against bodies** (5-fold cross-fit): {m['titles']} titles, own body removed for "
             f"{m['own_removed']}; the nearest body is the own one for {m['own_nearest']}. Held-out AUC {auc}, "
             f"ECE {m['held_out_ece']:.3f}. At the bar: {_pct(m['counted'], m['titles'])} titles count, and "
             f"{_pct(m['counted_own'], m['counted'])} of those match their own question.", "",
             f"**Judged forum posts** (Reddit half the coverage test never uses, asking for help): {j['n']} posts, "
             f"{j['right']} of them judged right with the nearest built-in opening's answer; mean probability "
             f"{j['mean_probability']}, highest {j['max_probability']}. At the bar: {j['counted']} count, "
             f"{j['counted_right']} of them right.", "",
             "| the paper's question | nearest opening | cosine, gap, coverage | probability |", "|---|---|---|---|"]
    for name, row in report["paper"].items():
        lines.append(f"| {name} | {row['dialogue']} | {', '.join(f'{v:.3f}' for v in row['values'])} | "
                     f"{row['probability']:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None, *, prog: str = "python -m eval.logged_question") -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error, 130: interrupted)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=None, help="shared data directory (default $DTDIALOG_SHARED_DATA or "
                                                         "../shared/data)")
    parser.add_argument("--judged", default=str(JUDGED), help="judged posts (JSON lines: id, dialogue, asks_help, "
                                                              "verdict)")
    parser.add_argument("--seed", type=int, default=13, help="seed of the open-pool coin")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the report goes")
    parser.add_argument("--models-dir", type=Path, default=MODEL_PATH.parent, help="where the model goes")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    args = parser.parse_args(argv)
    command = "python -m eval.logged_question " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command))


if __name__ == "__main__":
    sys.exit(main())
