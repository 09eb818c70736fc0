"""``python -m eval.coverage.topics``: the topic map the built-in corpus was grown from.

The shared Reddit car posts outside the held-out half (``split.held_out``) that ask for help (a question mark or a
plea, ``eval.out_of_scope.asks_for_help``), and the mechanics questions, are encoded with MiniLM and grouped by
k-means (seed 13); each group is named by its most distinctive words (class TF-IDF) and sized, so the corpus can cover
the topics in proportion to how often people ask. The held-out half never enters the map.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from eval.entry import one_line_errors
from parsers.files import atomic_write_text

K, SEED, TERMS = 40, 13, 10


def topic_map(data_dir: Path, *, k: int = K) -> list[dict]:
    """Return the topics, largest first: size, Reddit and mechanics counts, distinctive terms, a few titles."""
    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfVectorizer

    from eval.already_tried.gold import reddit_questions
    from eval.coverage.split import held_out
    from eval.datasets import load_mechanics
    from eval.out_of_scope import asks_for_help
    from index.dense import DenseEncoder

    items = [(pid, t) for pid, t in reddit_questions(data_dir).items() if not held_out(pid) and asks_for_help(t)]
    items += [(f"mechanics:{d.id}", d.question) for d in load_mechanics(data_dir).dialogues]
    texts = [t[:1000] for _, t in items]
    vectors = np.asarray(DenseEncoder().encode(texts))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    labels = KMeans(n_clusters=k, n_init=10, random_state=SEED).fit(vectors).labels_
    tfidf = TfidfVectorizer(stop_words="english", sublinear_tf=True, token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z]+\b")
    weights = tfidf.fit_transform([" ".join(t for t, c in zip(texts, labels, strict=True) if c == g) for g in range(k)])
    vocab = np.asarray(tfidf.get_feature_names_out())
    out = []
    for g in range(k):
        members = [i for i, c in enumerate(labels) if c == g]
        reddit = sum(items[i][0].startswith("reddit:") for i in members)
        out.append({"size": len(members), "reddit": reddit, "mechanics": len(members) - reddit,
                    "terms": [str(w) for w in vocab[np.argsort(-weights[g].toarray()[0])[:TERMS]]]})
    return sorted(out, key=lambda t: -t["size"])


def markdown(topics: list[dict], command: str) -> str:
    lines = ["# Topic map of real car questions", "", f"Command: `{command}`", "",
             f"{sum(t['size'] for t in topics)} questions (Reddit posts outside the held-out half that ask for help, "
             "and the mechanics questions) in "
             f"{len(topics)} groups, largest first.", "", "| questions | Reddit | mechanics | distinctive words |",
             "|---|---|---|---|"]
    lines += [f"| {t['size']} | {t['reddit']} | {t['mechanics']} | {' '.join(t['terms'])} |" for t in topics]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.coverage.topics", description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="shared data directory")
    parser.add_argument("--k", type=int, default=K, help="number of topic groups")
    parser.add_argument("--out", type=Path, default=None, help="write the map as Markdown to this file")
    args = parser.parse_args(argv)

    def run() -> int:
        from eval.datasets import default_data_dir

        report = markdown(topic_map(args.data_dir or default_data_dir(), k=args.k),
                          "python -m eval.coverage.topics " + " ".join(argv if argv is not None else sys.argv[1:]))
        print(report)
        if args.out:
            atomic_write_text(args.out, report)
        return 0

    return one_line_errors(run)


if __name__ == "__main__":
    sys.exit(main())
