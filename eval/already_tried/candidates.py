"""Build the unjudged file the judges read: real questions that mention a done action, with their candidates.

``python -m eval.already_tried.candidates --out FILE`` picks, with seed 13, up to 150 mechanics questions and 130
Reddit car posts (with a question mark and a body) that mention a done action (the ``MENTIONS_DONE`` words; the judges
then decide whether the question really states one), and gives each the accepted answer where there is one plus the
BM25 and dense top-5 from one pool (the shared mechanics answers and the 184 built-in dialogues the corpus held when
they were judged), interleaved, 10 at most.
The file holds the texts, so it is written outside the repository; the judgments keep only ids.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

from eval.already_tried.gold import MAX_CANDIDATES, judged_builtin_pool
from eval.datasets import default_data_dir, load_mechanics, reddit_questions
from eval.entry import one_line_errors
from parsers.files import atomic_write_text

MENTIONS_DONE = re.compile(
    r"\b(replaced|changed|checked|tested|tried|swapped|installed|cleaned|already|ruled out|put (?:in )?a new|"
    r"bought a new|new (?:battery|starter|alternator|plugs?|coils?|pump|filter|sensor|tires?|brakes?|pads|rotors|"
    r"thermostat)|flushed|topped off|rebuilt|re-?seated)\b", re.IGNORECASE)
SEED, MECHANICS, REDDIT, TOP = 13, 150, 130, 5
#: The dense ranking's encoder runtime: the portable reference, so any CPU draws the same candidates (OpenVINO's
#: bfloat16 products reorder near ties)
DRAW_RUNTIME = "onnxruntime"


def build(data_dir: Path) -> list[dict]:
    """Return the questions with their candidate ids and texts, in the judges' order."""
    from eval.methods import get_method

    mechanics = load_mechanics(data_dir)
    pool = [*mechanics.pool, *judged_builtin_pool()]
    texts = {a.id: a.text for a in pool}
    picked = [{"id": f"mechanics:{d.id}", "question": d.question, "gold": d.answer_ids[0]}
              for d in mechanics.dialogues if MENTIONS_DONE.search(d.question)]
    posts = [{"id": pid, "question": text, "gold": None} for pid, text in reddit_questions(data_dir).items()
             if "?" in text and len(text.partition("\n")[2]) > 80 and MENTIONS_DONE.search(text.partition("\n")[2])]
    rng = random.Random(SEED)
    rng.shuffle(picked)
    rng.shuffle(posts)
    chosen = picked[:MECHANICS] + posts[:REDDIT]
    rng.shuffle(chosen)
    rankers = [get_method("dense", runtime=DRAW_RUNTIME), get_method("keyword")]
    for method in rankers:
        method.fit(pool=pool)
    for q in chosen:
        tops = [[cid for cid, _ in m.rank(question=q["question"], followups=(), step=0, exclude_ids=(), k=TOP)]
                for m in rankers]
        ids = list(dict.fromkeys([*([q["gold"]] if q["gold"] else []), *(c for pair in zip(*tops) for c in pair)]))
        q["candidates"] = [{"id": cid, "text": texts[cid]} for cid in ids[:MAX_CANDIDATES]]
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.already_tried.candidates", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the unjudged JSONL file to write (outside the repo)")
    parser.add_argument("--data-dir", type=Path, default=None, help="shared data directory")
    args = parser.parse_args(argv)

    def run() -> int:
        rows = build(args.data_dir or default_data_dir())
        atomic_write_text(args.out, "".join(json.dumps(r) + "\n" for r in rows))
        print(f"{len(rows)} questions written to {args.out}")
        return 0

    return one_line_errors(run)


if __name__ == "__main__":
    sys.exit(main())
