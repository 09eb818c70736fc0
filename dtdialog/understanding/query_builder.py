"""Query formation per question part (paper section 3.4): keywords plus ``RR [phrase]`` terms.

Step 0 queries with part Q1. Step i+1 queries with the next part (or the last one once the plan
is exhausted) plus the keywords of the user's reply C_i; answers already delivered are excluded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dtdialog.understanding.subtrees import QuestionPlan
from index.base import RRTerm, SearchQuery
from index.documents import edu_words
from index.vocabulary import content_words
from parsers.relations import is_default
from parsers.tree import EDU, DiscourseTree, RelationInstance

#: At most this many keywords per query (long pastes would otherwise make slow, unfocused queries).
MAX_KEYWORDS = 40
#: At most this many words of the previous answer join a follow-up's query.
MAX_CONTEXT_KEYWORDS = 10
#: At most this many words per ``RR [phrase]`` term.
MAX_RR_WORDS = 12
#: At most this many keywords when the first step searches the whole question (the generator splits them into
#: several index searches and sums the scores, so a long question is searched with all its words).
MAX_QUESTION_KEYWORDS = 120


def edu_keywords(edus: Iterable[EDU]) -> list[str]:
    """Return the content-word lemmas of ``edus``, deduplicated in order.

    Same vocabulary as the index side (``index.documents.edu_words`` + ``index.vocabulary.content_words``),
    which is ``rr_terms_of`` restricted to a part.
    """
    return content_words(w for edu in edus for w in edu_words(edu))


def rr_term(instance: RelationInstance) -> RRTerm:
    """Return ``Relation [content words of its EDUs]`` for one relation instance."""
    return RRTerm(instance.relation, tuple(edu_keywords(instance.edus)[:MAX_RR_WORDS]))


def build_query(plan: QuestionPlan, *, part_index: int, followups: Sequence[DiscourseTree] = (),
                exclude_ids: Sequence[str] = (), size: int = 20, context_keywords: Sequence[str] = (),
                whole_question: bool = False) -> SearchQuery:
    """Return the search query for ``plan.parts[part_index]`` plus the follow-up replies' keywords and relations.

    Follow-ups come newest last; their keywords come first so that a long question does not
    crowd the user's latest words out of the keyword cap. ``context_keywords`` (words of the
    answer the follow-up replies to: "It did at first" is about *its* starting fluid) come last.

    ``whole_question`` (the first step, no follow-ups): the part's keywords come first, then the keywords of the
    rest of the question, and every part's ``RR [phrase]`` terms are added. Searching one part only leaves most of
    a long question's words unsearched, and with them most of the right answers (docs/engine.md).
    """
    part = plan.parts[min(part_index, len(plan.parts) - 1)]
    keywords: dict[str, None] = {}
    for tree in reversed(followups):
        for word in edu_keywords(tree.edus):
            keywords.setdefault(word, None)
    for word in edu_keywords(part.edus):
        keywords.setdefault(word, None)
    if followups:
        for word in context_keywords[:MAX_CONTEXT_KEYWORDS]:
            keywords.setdefault(word, None)
    cap = MAX_KEYWORDS
    relations = list(part.relations)
    if whole_question and not followups:
        for word in edu_keywords(plan.tree.edus):
            keywords.setdefault(word, None)
        cap = MAX_QUESTION_KEYWORDS
        relations += [inst for other in plan.parts if other is not part for inst in other.relations]
    query = SearchQuery(size=size).with_keywords(*list(keywords)[:cap])
    for inst in relations:
        term = rr_term(inst)
        if term.words:
            query = query.with_rr(term.relation, term.words)
    if followups:
        for node in followups[-1].non_default_nodes():
            term = rr_term(followups[-1].instance(node))
            if term.words and not is_default(term.relation):
                query = query.with_rr(term.relation, term.words)
    if exclude_ids:
        query = query.excluding(*dict.fromkeys(exclude_ids))
    return query
