"""stanza NLP backend, for machines that have stanza and its English models installed locally.

Nothing is downloaded at run time: the models must already be in ``model_dir``,
``$STANZA_RESOURCES_DIR`` or ``~/stanza_resources``. To install them, run
``pip install stanza`` and ``python -c "import stanza; stanza.download('en')"``
on a connected machine, then copy ``~/stanza_resources`` over.

Universal Dependencies labels are renamed to the spaCy (ClearNLP) labels the
segmenter and the cue lexicon were built with (``acl:relcl`` -> ``relcl``, ...).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from parsers.errors import ModelNotAvailableError
from parsers.nlp_base import AnalyzedText, NLPBackend, Phrase, Token

INSTALL_HINT = ("install stanza (pip install stanza) and its English models: run "
                "python -c \"import stanza; stanza.download('en')\" on a connected machine, then copy "
                "~/stanza_resources here (or set STANZA_RESOURCES_DIR)")
#: UD relation -> the spaCy English label the rules expect.
UD_TO_SPACY: dict[str, str] = {
    "root": "ROOT", "acl:relcl": "relcl", "nsubj:pass": "nsubjpass", "obj": "dobj", "iobj": "dative",
    "det:poss": "poss", "nmod:poss": "poss", "compound:prt": "prt", "aux:pass": "auxpass", "obl": "pobj",
    "csubj:pass": "csubjpass", "obl:npmod": "npadvmod", "nmod:npmod": "npadvmod", "obl:tmod": "npadvmod",
}
_CHUNK_DEPS = frozenset({"det", "amod", "compound", "nummod", "poss", "det:poss", "nmod:poss", "flat"})


def resources_dir(model_dir: str | Path | None = None) -> Path:
    """Return the stanza resources folder to use (may not exist)."""
    if model_dir:
        return Path(model_dir)
    env = os.environ.get("STANZA_RESOURCES_DIR")
    return Path(env) if env else Path.home() / "stanza_resources"


def map_deprel(deprel: str) -> str:
    """Return the spaCy-style label for a UD ``deprel``."""
    key = deprel.lower()
    return UD_TO_SPACY.get(key, key.split(":")[0])


class StanzaBackend(NLPBackend):
    """NLP backend over a local stanza English pipeline; ``ModelNotAvailableError`` says how to install it."""

    name = "stanza"

    def __init__(self, *, model_dir: str | Path | None = None, lang: str = "en", use_gpu: bool = False) -> None:
        try:
            import stanza
        except ImportError:
            raise ModelNotAvailableError(f"stanza is not installed: {INSTALL_HINT}") from None
        folder = resources_dir(model_dir)
        if not (folder / lang).is_dir():
            raise ModelNotAvailableError(f"stanza {lang!r} models not found in {folder}: {INSTALL_HINT}")
        try:
            self.nlp = stanza.Pipeline(lang=lang, dir=str(folder), processors="tokenize,mwt,pos,lemma,depparse,ner",
                                       download_method=None, use_gpu=use_gpu, verbose=False)
        except Exception as exc:  # stanza raises several types for missing/corrupt model files
            raise ModelNotAvailableError(f"stanza could not load its {lang!r} models from {folder} ({exc}): "
                                         f"{INSTALL_HINT}") from None

    def analyze(self, text: str) -> AnalyzedText:
        return doc_to_analyzed(self.nlp(text), text)

    def analyze_many(self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1) -> Iterator[AnalyzedText]:
        for text in texts:
            yield self.analyze(text)


def doc_to_analyzed(doc: Any, text: str) -> AnalyzedText:
    """Return the ``AnalyzedText`` view of a stanza ``Document`` over ``text``."""
    from spacy.lang.en.stop_words import STOP_WORDS

    rows: list[dict[str, Any]] = []
    sentences: list[tuple[int, int]] = []
    for s_i, sent in enumerate(doc.sentences):
        base = len(rows)
        for word in sent.words:
            token = word.parent
            start = getattr(word, "start_char", None)
            end = getattr(word, "end_char", None)
            if start is None or end is None:
                start, end = token.start_char, token.end_char
            rows.append({"text": word.text, "idx": start, "end": end, "lemma": (word.lemma or word.text).lower(),
                         "pos": word.upos or "X", "tag": word.xpos or "", "dep": map_deprel(word.deprel or "dep"),
                         "head": base + word.head - 1 if word.head else base + word.id - 1, "sent": s_i})
        sentences.append((base, len(rows)))
    tokens = []
    for i, r in enumerate(rows):
        nxt = rows[i + 1]["idx"] if i + 1 < len(rows) else len(text)
        tokens.append(Token(i=i, text=r["text"], idx=r["idx"], lemma=r["lemma"], pos=r["pos"], tag=r["tag"],
                            dep=r["dep"], head=r["head"], sent=r["sent"], is_stop=r["text"].lower() in STOP_WORDS,
                            is_punct=r["pos"] == "PUNCT", whitespace=text[r["end"]:nxt]))
    chunks = []
    for t in tokens:
        if t.pos in ("NOUN", "PROPN") and t.dep not in ("compound", "flat"):
            lo = min([t.i] + [k.i for k in tokens if k.head == t.i and k.dep in _CHUNK_DEPS and k.i < t.i])
            chunks.append(Phrase(lo, t.i + 1, "NP", text[tokens[lo].idx: t.end]))
    ents = []
    for ent in getattr(doc, "ents", []):
        inside = [t.i for t in tokens if ent.start_char <= t.idx < ent.end_char]
        if inside:
            ents.append(Phrase(inside[0], inside[-1] + 1, ent.type, ent.text))
    return AnalyzedText(text=text, tokens=tuple(tokens), sentences=tuple(sentences), noun_chunks=tuple(chunks),
                        entities=tuple(ents))
