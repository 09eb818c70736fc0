"""``python -m eval.already_tried.detector``: can the signals the engine has tell a repeat of what was tried at all?

The demotion rule (stage 5c) flags 20 of the 160 candidates judged to repeat what was tried. Before a better reader goes
into the engine, this measures what its signals can tell apart. Per judged candidate it reads three families:

- ``rule``: the engine's reading, the main recommendation repeating an extracted action, and any clause's advice doing so;
- ``lexical``: the extracted actions' parts named anywhere in the answer, in its first two sentences, and their share
  of the answer's single-word terms;
- ``dense``: the MiniLM cosine of the answer's sentences with the extracted actions (best, and best of the first two),
  and of the whole answer with the question.

Each set of families is a logistic regression scored out of fold (folds by question, so no question is both fitted
and scored), over all judged candidates and within the judged-relevant ones: a ranker puts a relevant answer first,
so a demotion helps only where it tells a relevant repeat from a relevant, new answer. The last set swaps the
extracted actions for the judges' own ``tried`` phrases: what a perfect extraction would give these signals.
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

from eval.entry import one_line_errors
from index.vocabulary import SENTENCE_BREAK
from parsers.errors import InputError
from parsers.files import atomic_write_text, check_out_dir

RULE = ("rule_main", "rule_advice")
LEXICAL = ("named", "named_first", "named_share")
DENSE = ("sentence_best", "sentence_first", "answer_question")
#: feature set name -> (features, whether the tried actions are the judges' phrases rather than the engine's reading)
SETS: dict[str, tuple[tuple[str, ...], bool]] = {
    "rule": (RULE, False),
    "rule + lexical": (RULE + LEXICAL, False),
    "rule + lexical + dense": (RULE + LEXICAL + DENSE, False),
    "rule + lexical + dense, the judges' tried phrases": (RULE + LEXICAL + DENSE, True),
}
FOLDS, SENTENCES = 5, 8


@dataclass(frozen=True)
class Row:
    """One judged candidate: its question's index, the judges' labels, and its features read both ways."""

    question: int
    repeats: bool
    relevant: bool
    engine: dict[str, float]
    judges: dict[str, float]


def sentences(text: str) -> list[str]:
    """Return the first ``SENTENCES`` sentences of an answer (what its advice leads with)."""
    return [s for s in SENTENCE_BREAK.split(text.strip()) if s.strip()][:SENTENCES] or [text]


def lexical_features(answer: str, heads: Sequence[frozenset[str]], normalizer) -> dict[str, float]:
    """Return how much the answer names the tried parts (``heads``: each action's part terms)."""
    parts = frozenset().union(*heads) if heads else frozenset()
    terms = normalizer.terms_of_text(answer)
    first = normalizer.terms_of_text(" ".join(sentences(answer)[:2]))
    singles = {t for t in terms if " " not in t}
    return {"named": float(bool(parts & terms)), "named_first": float(bool(parts & first)),
            "named_share": len(parts & singles) / len(singles) if singles else 0.0}


def dense_features(sentence_vectors: np.ndarray, tried_vectors: np.ndarray | None, answer_vector: np.ndarray,
                   question_vector: np.ndarray) -> dict[str, float]:
    """Return the cosines (unit vectors) of the answer's sentences with the tried actions, and answer with question."""
    if tried_vectors is None or not len(tried_vectors):
        best = first = 0.0
    else:
        sims = sentence_vectors @ tried_vectors.T
        best, first = float(sims.max()), float(sims[:2].max())
    return {"sentence_best": best, "sentence_first": first, "answer_question": float(answer_vector @ question_vector)}


def read_rows(questions, parser, normalizer, encoder, *, progress=None) -> list[Row]:
    """Return one ``Row`` per judged candidate of ``questions`` (``gold.TriedQuestion``)."""
    from dtdialog.understanding.tried import (
        extract_tried,
        head_terms,
        main_recommendation,
        recommendation_in,
        repeated_action,
    )

    rows = []
    for qi, q in enumerate(questions):
        tried = extract_tried(parser.parse(q.question), normalizer)
        engine_heads = [head_terms(a.objects) or a.objects for a in tried]
        judged_heads = [t for t in (normalizer.terms_of_text(p) for p in q.tried) if t]
        engine_texts, judged_texts = [a.text for a in tried], list(q.tried)
        split = [sentences(c.text) for c in q.candidates]
        vectors = encoder.encode([q.question, *engine_texts, *judged_texts, *(c.text for c in q.candidates),
                                  *(s for parts in split for s in parts)])
        question_vector, at = vectors[0], 1
        engine_vectors, at = vectors[at:at + len(engine_texts)], at + len(engine_texts)
        judged_vectors, at = vectors[at:at + len(judged_texts)], at + len(judged_texts)
        answer_vectors, at = vectors[at:at + len(q.candidates)], at + len(q.candidates)
        for k, (cand, parts) in enumerate(zip(q.candidates, split, strict=True)):
            sentence_vectors, at = vectors[at:at + len(parts)], at + len(parts)
            tree = parser.parse(cand.text)
            advice = [r for edu in tree.edus if (r := recommendation_in(edu, normalizer))]
            rule = {"rule_main": float(repeated_action(main_recommendation(tree, normalizer), tried) is not None),
                    "rule_advice": float(any(repeated_action(r, tried) for r in advice))}
            reads = {}
            for name, heads, tried_vectors in (("engine", engine_heads, engine_vectors),
                                               ("judges", judged_heads, judged_vectors)):
                reads[name] = {**rule, **lexical_features(cand.text, heads, normalizer),
                               **dense_features(sentence_vectors, tried_vectors, answer_vectors[k], question_vector)}
            rows.append(Row(question=qi, repeats=cand.repeats_tried, relevant=cand.relevant, **reads))
        if progress is not None:
            progress.update(1)
    return rows


def out_of_fold(X: np.ndarray, y: np.ndarray, groups: np.ndarray, *, folds: int = FOLDS) -> np.ndarray:
    """Return each row's P(repeat) from a logistic regression fitted on the folds that do not hold its question."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if len(set(groups)) < folds:
        raise InputError(f"the detector needs at least {folds} judged questions, got {len(set(groups))}")
    out = np.full(len(y), np.nan)
    for train, test in GroupKFold(n_splits=folds).split(X, y, groups):
        if len(set(y[train])) < 2:
            out[test] = float(y[train].mean())  # a fold with one class has nothing to learn
            continue
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X[train], y[train])
        out[test] = model.predict_proba(X[test])[:, 1]
    return out


def separation(y: np.ndarray, p: np.ndarray) -> dict:
    """Return ROC AUC and average precision of scores ``p`` for labels ``y`` (None when one class is missing)."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    if len(set(y.tolist())) < 2:
        return {"auc": None, "ap": None, "base": float(y.mean()) if len(y) else None, "n": int(len(y))}
    return {"auc": round(float(roc_auc_score(y, p)), 3), "ap": round(float(average_precision_score(y, p)), 3),
            "base": round(float(y.mean()), 3), "n": int(len(y)), "repeats": int(y.sum())}


def evaluate(rows: Sequence[Row], *, folds: int = FOLDS) -> dict[str, dict]:
    """Return, per feature set, the out-of-fold separation over all candidates and within the relevant ones."""
    y = np.array([r.repeats for r in rows], dtype=int)
    relevant = np.array([r.relevant for r in rows], dtype=bool)
    groups = np.array([r.question for r in rows])
    out = {}
    for name, (features, judges) in SETS.items():
        X = np.array([[(r.judges if judges else r.engine)[f] for f in features] for r in rows], dtype=float)
        p = out_of_fold(X, y, groups, folds=folds)
        # within the relevant ones: fitted on them alone, since that is the choice a demotion after ranking faces
        p_relevant = out_of_fold(X[relevant], y[relevant], groups[relevant], folds=folds)
        out[name] = {"all": separation(y, p), "relevant": separation(y[relevant], p_relevant)}
    return out


def markdown(found: dict[str, dict], *, command: str, header: str) -> str:
    def cell(s: dict) -> str:
        return "—" if s["auc"] is None else f"{s['auc']:.3f} | {s['ap']:.3f} (base {s['base']:.3f})"

    any_set = next(iter(found.values()))
    lines = ["# Reading a repeat of what was tried: what the engine's signals can tell apart", "",
             f"Command: `{command}`", "", header, "",
             f"Out-of-fold logistic regression ({FOLDS} folds by question). All judged candidates: "
             f"{any_set['all']['n']} ({any_set['all'].get('repeats', 0)} repeats); judged relevant: "
             f"{any_set['relevant']['n']} ({any_set['relevant'].get('repeats', 0)} repeats).", "",
             "| features | all: ROC AUC | all: average precision | relevant only: ROC AUC | relevant only: average "
             "precision |", "|---|---|---|---|---|"]
    lines += [f"| {name} | {cell(s['all'])} | {cell(s['relevant'])} |" for name, s in found.items()]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, *, command: str) -> int:
    from tqdm import tqdm

    from dtdialog.setup.assembly import engine_parser_name
    from dtdialog.understanding.entities import EntityNormalizer
    from eval.already_tried.gold import load_gold_file, load_shipped
    from eval.provenance import encoder_runtime, git_commit
    from index.dense import DenseEncoder
    from parsers.base import get_parser

    if args.out:
        check_out_dir(args.out)
    gold = load_gold_file(args.data) if args.data else load_shipped(args.data_dir)
    parser_name = engine_parser_name(None)
    with tqdm(total=len(gold.questions), desc="reading candidates", unit="q", file=sys.stderr,
              disable=args.no_progress) as bar:
        rows = read_rows(gold.questions, get_parser(parser_name), EntityNormalizer(), DenseEncoder(), progress=bar)
    found = evaluate(rows)
    header = (f"Data: {gold.name}: {len(gold.questions)} questions state what was tried. Parser {parser_name}; "
              f"encoder {encoder_runtime()}; commit {git_commit()}.")
    report = markdown(found, command=command, header=header)
    print(report)
    if args.out:
        out = check_out_dir(Path(args.out))
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "repeat_detector.md", report)
        atomic_write_text(out / "repeat_detector.json", json.dumps(
            {"command": command, "header": header, "folds": FOLDS, "sets": found}, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    prog = "python -m eval.already_tried.detector"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument("--data", type=Path, default=None, help="a self-contained judged JSONL file of your own")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="shared data directory (default $DTDIALOG_SHARED_DATA or ../shared/data)")
    parser.add_argument("--out", default=None, help="directory for repeat_detector.md and .json")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    command = f"{prog} " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command.strip()))


if __name__ == "__main__":
    sys.exit(main())
