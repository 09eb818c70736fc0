"""Build the cue lexicon from GUM train: ``python -m parsers.build_lexicon --gum ../shared/data/gum_rst``.

For every inner node of every binarised gold tree, the cue features of joining its
left and right children (``cue_lexicon.join_features`` over spaCy analyses of
the gold EDUs) are counted against the node's ``Relation|NUC`` label. Genres
licensed non-commercially are left out, so the shipped counts derive only from
CC-BY texts. Features seen fewer than ``--min-count`` times are dropped.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

from tqdm import tqdm

from parsers.cue_lexicon import DEFAULT_LEXICON_PATH, CueLexicon, UnitView, edu_view, join_features, level_of
from parsers.errors import DTDialogError
from parsers.gum import DEFAULT_GUM_DIR, NON_COMMERCIAL_GENRES, iter_gum
from parsers.nlp_base import AnalyzedText
from parsers.parseval import binarize_node
from parsers.tree import DiscourseTree


def gold_views(tree: DiscourseTree, doc: AnalyzedText) -> list[UnitView]:
    """Return one ``UnitView`` per gold EDU of ``tree``, from the analysis of ``tree.text``."""
    views = []
    ti = 0
    n = len(doc.tokens)
    for edu in tree.edus:
        while ti < n and doc.tokens[ti].idx < edu.start:
            ti += 1
        lo = ti
        while ti < n and doc.tokens[ti].idx < edu.end:
            ti += 1
        views.append(edu_view(doc, lo, ti) if ti > lo else UnitView(words=(), head_dep="frag", sent=-1))
    return views


def count_tree(tree: DiscourseTree, views: list[UnitView], features: dict[str, Counter],
               labels: dict[str, Counter]) -> None:
    """Add the joins of ``tree`` to the ``features`` and ``labels`` counters."""
    for node in binarize_node(tree.root).walk():
        if node.is_leaf:
            continue
        left, right = node.children
        lv, rv = views[left.first: left.last + 1], views[right.first: right.last + 1]
        label = f"{node.relation}|{''.join(node.nuclearity)}"
        labels[level_of(lv, rv)][label] += 1
        for feat in join_features(lv, rv):
            features[feat][label] += 1


def build(gum_dir: Path | str, *, split: str = "train", min_count: int = 5, limit: int = 0) -> CueLexicon:
    """Return a ``CueLexicon`` counted over the GUM ``split`` (commercially usable genres only)."""
    from parsers.nlp_spacy import SpacyBackend

    docs = list(iter_gum(gum_dir, split=split, exclude_genres=NON_COMMERCIAL_GENRES))
    if limit:
        docs = docs[:limit]
    nlp = SpacyBackend()
    features: dict[str, Counter] = defaultdict(Counter)
    labels: dict[str, Counter] = defaultdict(Counter)
    analyses = nlp.analyze_many([d.tree.text for d in docs])
    for gum_doc, doc in tqdm(zip(docs, analyses), total=len(docs), desc="lexicon", file=sys.stderr):
        count_tree(gum_doc.tree, gold_views(gum_doc.tree, doc), features, labels)
    kept = {f: dict(c) for f, c in features.items() if sum(c.values()) >= min_count}
    return CueLexicon(
        features=kept, labels={k: dict(v) for k, v in labels.items()},
        meta={"source": f"GUM {split} (genres excluding {', '.join(sorted(NON_COMMERCIAL_GENRES))})",
              "documents": len(docs), "min_count": min_count, "license": "derived from CC-BY 4.0 GUM annotations"},
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parsers.build_lexicon", description=__doc__.splitlines()[0])
    ap.add_argument("--gum", default=str(DEFAULT_GUM_DIR), help="GUM RST folder (with lisp_binary/ and splits.tsv)")
    ap.add_argument("--split", default="train")
    ap.add_argument("--min-count", type=int, default=5, help="drop features seen fewer times (5 was best on GUM dev)")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N documents (quick runs)")
    ap.add_argument("--out", default=str(DEFAULT_LEXICON_PATH))
    args = ap.parse_args(argv)
    try:
        lex = build(args.gum, split=args.split, min_count=args.min_count, limit=args.limit)
        lex.to_disk(args.out)
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {len(lex.features)} features from {lex.meta['documents']} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
