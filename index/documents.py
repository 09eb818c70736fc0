"""Answer documents: one per answer utterance, with keywords, entities, relations and ``RR [EDU]`` terms.

Everything a search needs is computed here, at build time, from the answer's discourse tree;
nothing but the query is parsed at query time. The same ``keywords_of`` and ``rr_terms_of``
turn a question's tree into query terms, so both sides use one vocabulary.
"""

from __future__ import annotations

from typing import Any

from index.base import AnswerDocument, RRTerm
from index.position import detect_position, source_role
from index.vocabulary import content_words, words_of
from parsers.relations import is_default
from parsers.text_input import plain_text
from parsers.tree import EDU, DiscourseTree

#: What a built document holds; part of the cached built-in index's fingerprint, so a cache built by older code
#: is rebuilt rather than mixed with new documents. 2: ``meta`` carries the dialogue position (``index.position``);
#: 3: a follow-up's ``meta`` carries the customer reply it was written for (``reply_before``).
DOCUMENT_VERSION = 3

#: At most this many words of an EDU phrase are kept for display (``meta["rr_phrases"]``).
PHRASE_WORDS = 40


def edu_words(edu: EDU) -> list[str]:
    """Return the lemmas of an EDU, or its lower-cased words when the parser gave no lemmas."""
    if edu.lemmas:
        return [lemma for lemma in edu.lemmas for lemma in words_of(lemma)] or words_of(edu.text)
    return words_of(edu.text)


def keywords_of(tree: DiscourseTree) -> list[str]:
    """Return the lemmatized content words of every EDU of ``tree``, in text order, without repeats."""
    return content_words(w for edu in tree.edus for w in edu_words(edu))


def entities_of(tree: DiscourseTree) -> list[str]:
    """Return the entities found in the EDUs of ``tree``, lower-cased, without repeats."""
    seen: dict[str, None] = {}
    for edu in tree.edus:
        for entity in edu.entities:
            key = " ".join(entity.lower().split())
            if key:
                seen.setdefault(key, None)
    return list(seen)


def rr_terms_of(tree: DiscourseTree) -> list[RRTerm]:
    """Return one ``RRTerm`` per non-default relation node: the relation plus the content words of its EDUs.

    Nodes are taken pre-order (outermost first); a node whose EDUs have no content word is skipped.
    """
    terms: list[RRTerm] = []
    for node in tree.non_default_nodes():
        words = content_words(w for edu in tree.edus_of(node) for w in edu_words(edu))
        if words:
            terms.append(RRTerm(relation=node.relation or "", words=tuple(words)))
    return terms


def relations_of(tree: DiscourseTree) -> list[str]:
    """Return the distinct non-default relations of ``tree``, sorted."""
    return sorted({r for r in tree.relations() if not is_default(r)})


def rr_phrases_of(tree: DiscourseTree) -> list[str]:
    """Return ``"Relation [EDU text]"`` for each term of ``rr_terms_of`` (same order): the words a person reads."""
    phrases: list[str] = []
    for node in tree.non_default_nodes():
        if content_words(w for edu in tree.edus_of(node) for w in edu_words(edu)):
            phrases.append(f"{node.relation} [{tree.instance(node).phrase(PHRASE_WORDS)}]")
    return phrases


def build_document(
    *,
    doc_id: str,
    dialogue_id: str,
    position: int,
    text: str,
    tree: DiscourseTree,
    meta: dict[str, Any] | None = None,
    role: str | None = None,
) -> AnswerDocument:
    """Return the index document of one answer utterance, with its DT stored as JSON-ready dict.

    ``rr_edu`` holds the ``RRTerm`` of every non-default relation node; ``meta["rr_phrases"]``
    holds the matching EDU texts, used to show which part of the answer matched. ``meta`` also gets the
    answer's dialogue position (``index.position``): ``role`` (``opening``/``followup``; given by the builder,
    which sees the dialogue, else inferred from ``position``), ``stands_alone`` and ``position_reason``.
    ``meta["question"]`` is stored as plain text (markup removed). Ids are checked when a backend stores the
    document (``index.base.checked_documents``).
    """
    full_meta = dict(meta or {})
    if isinstance(full_meta.get("question"), str):  # shown beside the answer: stored as plain text, never markup
        full_meta["question"] = plain_text(full_meta["question"])
    full_meta["rr_phrases"] = rr_phrases_of(tree)
    full_meta.update(detect_position(tree, role=role or source_role(position, 1)).to_meta())
    return AnswerDocument(
        id=doc_id,
        dialogue_id=dialogue_id,
        position=position,
        text=text,
        keywords=tuple(keywords_of(tree)),
        entities=tuple(entities_of(tree)),
        relations=tuple(relations_of(tree)),
        rr_edu=tuple(rr_terms_of(tree)),
        tree=tree.to_dict(),
        meta=full_meta,
    )
