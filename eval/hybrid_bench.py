"""Turn latency with dense retrieval + the learned ranker on, and answer-encoding throughput.

    python -m eval.hybrid_bench [--answers 10000] [--questions 40] [--model hybrid+dt|hybrid] [--json OUT]

Like ``eval.turn_bench``: the built-in corpus's index is replicated to ``--answers`` documents
(unique ids, "[copy k]" suffix). Encoding throughput is measured on the distinct answer texts
(the MiniLM batch encoder, answers/s); the copies reuse their original's vector, so the 10k-row
matrix, its hubness and the per-turn dense search are real while the encoding is not repeated
10k times on a shared CPU. After warm-up turns, each built-in opening question starts a session
(turn 1) and its logged follow-up C1 is turn 2; prints p50/p95/p99 per turn in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from parsers.errors import DTDialogError

TARGET_P95_MS = 150.0
MODELS = {"hybrid+dt": "ranker-v1.joblib", "hybrid": "ranker-v1-hybrid.joblib"}


def run(*, answers: int, questions: int, model: str, seed: int = 0) -> dict[str, Any]:
    """Return throughput and per-turn latency summaries (milliseconds)."""
    from data.builtin import load_builtin_corpus
    from dtdialog.manager import DialogueManager
    from dtdialog.ranking.factory import build_ranking
    from dtdialog.ranking.learned_scorer import MODELS_DIR
    from dtdialog.runtime import load_runtime
    from dtdialog.selector import AnswerSelector
    from dtdialog.session_store import SessionStore
    from eval.turn_bench import replicated_index, summarize
    from index.dense import DenseEncoder
    from index.dense_store import DenseStore, TermStats

    runtime = load_runtime(ranker="rules", progress=True)
    dialogues = load_builtin_corpus()
    random.Random(seed).shuffle(dialogues)
    dialogues = dialogues[:questions]
    encoder = DenseEncoder()
    with tempfile.TemporaryDirectory(prefix="dtq-hybrid-bench-") as tmp:
        path = Path(tmp) / "answers.sqlite"
        index = replicated_index(runtime.index, path, answers)
        ids = index.ids()
        source = {i: runtime.index.get(i) for i in runtime.index.ids()}
        unique = [d.text for d in source.values() if d is not None]
        encoder.encode(unique[:8])  # load the model outside the timing
        t0 = time.perf_counter()
        vectors = encoder.encode(unique, progress=True)
        encode_s = time.perf_counter() - t0
        row_of = {d.id: i for i, d in enumerate(d for d in source.values() if d is not None)}
        matrix = np.stack([vectors[row_of[i.split("~r")[0]]] for i in ids]).astype(np.float32)
        t0 = time.perf_counter()
        texts = [index.get(i).text for i in ids]
        store = DenseStore(ids=ids, vectors=matrix, terms=TermStats.of(texts))
        store_s = time.perf_counter() - t0
        store.save(path)
        generator, scorer = build_ranking(index=index, index_path=path, config=runtime.selector.config,
                                          ranker="learned", model_path=MODELS_DIR / MODELS[model], encoder=encoder,
                                          progress=False)
        selector = AnswerSelector(index=index, parser=runtime.parser, config=runtime.selector.config,
                                  generator=generator, scorer=scorer)
        manager = DialogueManager(selector=selector, store=SessionStore(Path(tmp) / "sessions.sqlite"))
        for d in dialogues[:3]:
            manager.handle(session_id=manager.start_session(), text=d.question)
        first: list[float] = []
        follow: list[float] = []
        for d in tqdm(dialogues, desc="timing turns", unit="dialogue", file=sys.stderr):
            sid = manager.start_session()
            start = time.perf_counter()
            result = manager.handle(session_id=sid, text=d.question)
            first.append((time.perf_counter() - start) * 1000)
            c1 = next((t.text for t in d.turns[1:] if t.role == "C"), None)
            if c1 and result.kind == "answer":
                start = time.perf_counter()
                manager.handle(session_id=sid, text=c1)
                follow.append((time.perf_counter() - start) * 1000)
        size = index.count()
        index.close()
        manager.store.close()
    runtime.close()
    everything = first + follow
    p95 = summarize(everything)["p95_ms"] if everything else float("nan")
    return {"answers_indexed": size, "questions": len(dialogues), "model": model,
            "encode_answers_per_second": round(len(unique) / encode_s, 1), "encoded_answers": len(unique),
            "store_build_seconds_10k": round(store_s, 2),
            "first_turn": summarize(first), "follow_up_turn": summarize(follow), "all_turns": summarize(everything),
            "target_p95_ms": TARGET_P95_MS, "meets_target": bool(p95 <= TARGET_P95_MS)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.hybrid_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--answers", type=int, default=10_000)
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--model", choices=list(MODELS), default="hybrid+dt")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.answers < 1 or args.questions < 1:
        ap.error("--answers and --questions must be at least 1")
    try:
        result = run(answers=args.answers, questions=args.questions, model=args.model, seed=args.seed)
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in result.items()}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
