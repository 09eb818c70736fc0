"""GUM documents prepared for training a parser: the spaCy analysis of each text, aligned to its gold EDUs."""

from __future__ import annotations

import bisect
import hashlib
import logging
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path

from parsers.errors import InputError
from parsers.features import EduView, boundary_labels
from parsers.gum import NON_COMMERCIAL_GENRES, GumDocument, iter_gum
from parsers.nlp_base import AnalyzedText
from parsers.tree import DiscourseTree

log = logging.getLogger(__name__)


@dataclass
class PreparedDoc:
    """A GUM document with its spaCy analysis aligned to the gold EDUs."""

    doc: GumDocument
    analyzed: AnalyzedText
    seg_labels: list[int]
    gold_views: list[EduView]

    @property
    def gold(self) -> DiscourseTree:
        return self.doc.tree


def _analyze_all(docs: list[GumDocument], cache_dir: Path | None) -> list[AnalyzedText]:
    from tqdm import tqdm

    from parsers.nlp_spacy import SpacyBackend

    cache_file = None
    if cache_dir is not None:
        key = hashlib.sha1("\n".join(d.name + str(len(d.tree.text)) for d in docs).encode()).hexdigest()[:16]
        cache_file = cache_dir / f"gum-spacy-{key}.pkl"
        if cache_file.is_file():
            log.info("loading cached spaCy analyses from %s", cache_file)
            with cache_file.open("rb") as fh:
                return pickle.load(fh)
    backend = SpacyBackend()
    out = list(tqdm(backend.analyze_many([d.tree.text for d in docs], batch_size=8), total=len(docs),
                    desc="spaCy", unit="doc", file=sys.stderr))
    if cache_file is not None:
        from parsers.files import atomic_write

        atomic_write(cache_file, lambda fh: pickle.dump(out, fh))
    return out


def gold_views(analyzed: AnalyzedText, tree: DiscourseTree) -> list[EduView]:
    """Return the gold EDUs of ``tree`` as token ranges of ``analyzed`` (same text)."""
    starts = [t.idx for t in analyzed.tokens]
    views = []
    for e in tree.edus:
        a = bisect.bisect_left(starts, e.start)
        b = bisect.bisect_left(starts, e.end)
        if b <= a:  # an EDU inside one spaCy token cannot happen with space-separated EDUs; keep it anyway
            b = a + 1
        views.append(EduView(start=a, end=b, sentence=analyzed.tokens[min(a, len(starts) - 1)].sent))
    return views


def prepare(gum_dir: Path, split: str, *, limit: int | None, cache_dir: Path | None) -> list[PreparedDoc]:
    """Return the permissive-genre documents of ``split`` with spaCy analyses and gold alignments."""
    docs = list(iter_gum(gum_dir, split=split, exclude_genres=NON_COMMERCIAL_GENRES))
    if limit:
        docs = docs[:limit]
    if not docs:
        raise InputError(f"no {split} documents found under {gum_dir}")
    log.info("%s: %d documents (%s)", split, len(docs), ", ".join(sorted({d.genre for d in docs})))
    analyses = _analyze_all(docs, cache_dir)
    out = []
    for d, a in zip(docs, analyses):
        out.append(PreparedDoc(doc=d, analyzed=a, seg_labels=boundary_labels(a, [e.start for e in d.tree.edus]),
                               gold_views=gold_views(a, d.tree)))
    return out
