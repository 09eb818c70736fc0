"""NP / VP / PP phrase chunks of a dependency parse: the text side of syntactic generalization.

``extract_phrases`` cuts an ``AnalyzedText`` into noun phrases (the backend's noun chunks), verb
phrases (a verb with its auxiliaries, negation, particles, objects and complements) and
prepositional phrases (a preposition with its object's subtree). It lives in the parser layer so
the index can store every answer's phrases at build time (``index.sg_store``) while the scoring
stays in ``dtdialog.selection.syntactic_generalization``, which re-exports these names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from parsers.errors import ModelNotAvailableError
from parsers.nlp_base import AnalyzedText, Token

CONTENT_POS = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "ADV", "NUM"})
_VP_RIGHT_DEPS = frozenset({"dobj", "obj", "prt", "attr", "acomp", "oprd", "xcomp", "dative", "advmod", "npadvmod"})
_VP_LEFT_DEPS = frozenset({"aux", "auxpass", "neg"})
MAX_PHRASE_TOKENS = 10


@dataclass(frozen=True)
class PhraseChunk:
    """A phrase of one text: its type (NP, VP, PP), lemmas and coarse parts of speech, in order."""

    kind: str
    lemmas: tuple[str, ...]
    pos: tuple[str, ...]
    # derived on first use and kept: generalization asks for the content lemmas and hashes phrases for every
    # candidate pair; an answer's phrases decoded from a store mostly need neither (``_trusted``)
    _content: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash((self.kind, self.lemmas, self.pos))
            object.__setattr__(self, "_hash", h)
        return h

    @property
    def content(self) -> frozenset[str]:
        """Return the content lemmas (nouns, verbs, adjectives, adverbs, numbers)."""
        c = self._content
        if c is None:
            c = frozenset(lem for lem, p in zip(self.lemmas, self.pos) if p in CONTENT_POS)
            object.__setattr__(self, "_content", c)
        return c

    @classmethod
    def _trusted(cls, kind: str, lemmas: tuple[str, ...], pos: tuple[str, ...]) -> PhraseChunk:
        """Return the chunk of fields already checked (a phrase store validated at load): no dataclass __init__,
        whose frozen field setting would dominate decoding the many phrases a turn reads."""
        self = object.__new__(cls)
        self.__dict__.update(kind=kind, lemmas=lemmas, pos=pos, _content=None, _hash=None)
        return self

    def __str__(self) -> str:
        return f"{self.kind}[{' '.join(self.lemmas)}]"

    def to_list(self) -> list:
        """Return ``[kind, lemmas, pos]`` (JSON-ready; ``from_list`` reverses it)."""
        return [self.kind, list(self.lemmas), list(self.pos)]

    @classmethod
    def from_list(cls, data: Sequence) -> PhraseChunk:
        """Return the chunk of a ``[kind, lemmas, pos]`` list; raises ``ValueError`` when malformed."""
        kind, lemmas, pos = data
        if not isinstance(kind, str) or len(lemmas) != len(pos):
            raise ValueError(f"malformed phrase chunk {data!r}")
        return cls(kind=kind, lemmas=tuple(str(x) for x in lemmas), pos=tuple(str(x) for x in pos))


#: A phrase as what its generalizations depend on, ``(kind, lemmas, pos)``: how a phrase store hands out an answer's
#: phrases for scoring (``SGPhraseStore.phrase_keys``); it hashes and compares as the ``PhraseChunk`` would, in C.
PhraseKey = tuple[str, tuple[str, ...], tuple[str, ...]]


def keys_of(phrases: Iterable[PhraseChunk]) -> list[PhraseKey]:
    """Return the ``PhraseKey`` of each phrase, in order."""
    return [(p.kind, p.lemmas, p.pos) for p in phrases]


def _subtree(root: int, children: dict[int, list[int]]) -> list[int]:
    out, stack = [], [root]
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(children.get(i, ()))
    return out


def _chunk(kind: str, tokens: Sequence[Token], indices: Iterable[int]) -> PhraseChunk | None:
    picked = [tokens[i] for i in sorted(set(indices)) if not tokens[i].is_punct and tokens[i].pos != "SPACE"]
    picked = picked[:MAX_PHRASE_TOKENS]
    if not picked or not any(t.pos in CONTENT_POS for t in picked):
        return None
    return PhraseChunk(kind=kind, lemmas=tuple(t.lemma.lower() for t in picked), pos=tuple(t.pos for t in picked))


def extract_phrases(text: AnalyzedText) -> list[PhraseChunk]:
    """Return the NP, VP and PP phrases of an analysed text, in text order within each type."""
    tokens = text.tokens
    children: dict[int, list[int]] = {}
    for t in tokens:
        if t.head != t.i:
            children.setdefault(t.head, []).append(t.i)
    phrases: list[PhraseChunk] = []
    for np_ in text.noun_chunks:
        chunk = _chunk("NP", tokens, range(np_.start, np_.end))
        if chunk:
            phrases.append(chunk)
    for t in tokens:
        if t.pos == "VERB":
            picked = [t.i]
            for c in children.get(t.i, ()):
                dep = tokens[c].dep
                if c < t.i and dep in _VP_LEFT_DEPS:
                    picked.append(c)
                elif c > t.i and dep in _VP_RIGHT_DEPS:
                    picked.extend(_subtree(c, children))
            chunk = _chunk("VP", tokens, picked)
            if chunk:
                phrases.append(chunk)
        elif t.dep == "prep" and any(tokens[c].dep in ("pobj", "pcomp") for c in children.get(t.i, ())):
            chunk = _chunk("PP", tokens, _subtree(t.i, children))
            if chunk:
                phrases.append(chunk)
    return phrases


def unused_pipes(nlp) -> list[str]:
    """Return the pipes of ``nlp`` phrase extraction can skip: NER runs last in spaCy's English pipelines and
    sets only entities, so skipping it leaves POS, dependencies, lemmas and noun chunks - the phrases - unchanged
    and the parse cheaper."""
    names = list(getattr(nlp, "pipe_names", ()))
    return ["ner"] if names and names[-1] == "ner" else []


def phrases_from_analysis_of(nlp_backend: object) -> bool:
    """Return True when the analyses of ``nlp_backend`` give the phrases ``phrases_of_texts`` would (its default
    pipeline, ``load_spacy()``): the same spaCy pipeline, skipping nothing but the entities, which phrases never read."""
    from parsers.nlp_spacy import SpacyBackend, load_spacy

    if not isinstance(nlp_backend, SpacyBackend) or set(nlp_backend.disable) - {"ner"}:
        return False
    try:
        return nlp_backend.nlp is load_spacy()
    except ModelNotAvailableError:
        return False


def phrases_of_text(text: str, *, nlp=None) -> list[PhraseChunk]:
    """Return the phrases of one text (``nlp`` defaults to ``load_spacy()``)."""
    from parsers.nlp_spacy import doc_to_analyzed, load_spacy

    nlp = nlp if nlp is not None else load_spacy()
    return extract_phrases(doc_to_analyzed(nlp(text, disable=unused_pipes(nlp))))


def phrases_of_texts(texts: Sequence[str], *, nlp=None, batch_size: int = 64, progress: bool = False,
                     desc: str = "parsing (SG)", done: int = 0) -> list[list[PhraseChunk]]:
    """Return the phrases of each of ``texts`` (one batched spaCy pass; ``nlp`` defaults to ``load_spacy()``).

    ``done``: texts of the same job whose phrases the caller has already (the bar counts them as done).
    """
    from parsers.nlp_spacy import doc_to_analyzed, load_spacy

    docs: Iterable = ()  # nothing to parse loads nothing: a caller holding every phrase may have no spaCy at all
    if texts:
        nlp = nlp if nlp is not None else load_spacy()
        docs = nlp.pipe(texts, batch_size=batch_size, disable=unused_pipes(nlp))
    if progress:
        import sys

        from tqdm import tqdm

        docs = tqdm(docs, total=len(texts) + done, initial=done, desc=desc, unit="text", file=sys.stderr,
                    dynamic_ncols=True)
    return [extract_phrases(doc_to_analyzed(doc)) for doc in docs]
