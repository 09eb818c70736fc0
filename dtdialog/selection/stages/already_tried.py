"""Stage 5c: demote an answer whose main recommendation repeats what the customer already tried.

Runs after scoring and before choose, so the learned ranker's features are untouched: it is a post-scoring
score factor. The actions the customer reported come from DT-Q (``dtdialog.understanding.tried.extract_tried``), from the
step's reply C_i, and from the session's memory of earlier replies (``tried=`` of ``rank_outcome``). An
answer is demoted only when the first recommendation of its nucleus EDUs repeats one of them: an answer that
addresses what still fails and mentions the tried part in passing (in a satellite) keeps its score.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from dtdialog.selection.scoring import ALREADY_TRIED, RankedCandidate
from dtdialog.selection.stages.plan import StepPlan
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.scoring_stage import Scored, demote
from dtdialog.selection.stages.tools import StageTools
from dtdialog.understanding.tried import (
    RULED_OUT,
    Recommendation,
    TriedAction,
    extract_tried,
    main_recommendation,
    merge_tried,
    recommendation_in,
    repeated_action,
    subject_objects,
    with_split_verb,
)
from parsers.tree import DiscourseTree


@dataclass(frozen=True)
class _Reading:
    tree: DiscourseTree
    main: Recommendation | None
    advice: tuple[Recommendation, ...]


#: answer id -> its reading (the DT it was read from, its main recommendation, every clause's advice): a stored
#: answer's advice never changes while its tree is the same object (the selector's analysis cache), so it is read
#: once, not every step
_CACHE_SIZE = 50_000
_cache: OrderedDict[str, _Reading] = OrderedDict()
_cache_lock = threading.Lock()


def known_tried(step: StepPlan, remembered: Sequence[TriedAction], *, tools: StageTools,
                record: StepRecord) -> list[TriedAction]:
    """Return what the customer tried: the session's memory, then DT-Q's reports, then the reply's."""
    found = merge_tried(remembered, extract_tried(step.plan.tree, tools.normalizer))
    if step.followup_tree is not None:
        # a reply's "I had it tested" tested what the opening is about; within the opening, "it" is read as before
        subject = subject_objects(step.plan.tree, tools.normalizer)
        found = merge_tried(found, extract_tried(step.followup_tree, tools.normalizer, antecedent=subject))
    record.tried = [a.to_dict() for a in found]
    return found


def demote_tried(scored: Scored, tried: Sequence[TriedAction], *, penalty: float, tools: StageTools,
                 record: StepRecord) -> Scored:
    """Return ``scored`` with repeating answers' scores multiplied by ``1 - penalty`` and re-sorted (stable)."""
    if not tried or penalty <= 0 or not scored.kept:
        return scored
    objects = frozenset().union(*(a.objects for a in tried))

    def reason(cand: RankedCandidate) -> str | None:
        repeated = _repeats(cand, tried, objects, tools)
        return repeated.explain() if repeated is not None else None

    _mark_still_suspected(scored, tried, objects, tools, record)
    scored, record.already_tried = demote(scored, reason, penalty=penalty, feature=ALREADY_TRIED)
    return scored


def _mark_still_suspected(scored: Scored, tried: Sequence[TriedAction], objects: frozenset[str], tools: StageTools,
                          record: StepRecord) -> None:
    """Record, per candidate, the reports its words still act on (``mentions_tried``), so the customer's why never
    says it leaves them out: a part found fine that its main clause is about ("Top it up" to "fluid level is fine",
    in words the reader of recommendations may miss), or an action done that any of its clauses recommends again
    ("To find out which, swap the cylinder 3 coil ..." to "I swapped the coil": a main clause the parser put in a
    satellite is no demotion, yet no leaving out either).
    """
    ruled_out = [(k, a) for k, a in enumerate(tried) if a.verb_class == RULED_OUT]
    done = [(k, a) for k, a in enumerate(tried) if a.verb_class != RULED_OUT]
    for cand in scored.kept:
        analysis = cand.analysis or tools.analyze(cand.document)
        if analysis.tree is None or not analysis.terms & objects:
            continue
        main = tools.normalizer.terms_of_edus(analysis.tree.nucleus_chain_edus()) if ruled_out else frozenset()
        named = [k for k, a in ruled_out if main & a.objects]
        advice = _reading(cand.document.id, analysis.tree, tools).advice if done else ()
        named += [k for k, a in done if any(repeated_action(r, [a]) for r in advice)]
        if named:
            record.mentions_tried[cand.document.id] = sorted(named)


def _repeats(cand: RankedCandidate, tried: Sequence[TriedAction], objects: frozenset[str],
             tools: StageTools) -> TriedAction | None:
    analysis = cand.analysis or tools.analyze(cand.document)
    tree = analysis.tree
    # most candidates never name a tried part: skip reading their recommendation (the learned ranker keeps ~100)
    if tree is None or not analysis.terms & objects:
        return None
    return repeated_action(_reading(cand.document.id, tree, tools).main, tried)


def _reading(doc_id: str, tree: DiscourseTree, tools: StageTools) -> _Reading:
    with _cache_lock:
        cached = _cache.get(doc_id)
        if cached is not None and cached.tree is tree:
            _cache.move_to_end(doc_id)
            return cached
    advice = tuple(r for edu in tree.edus if (r := recommendation_in(with_split_verb(tree, edu), tools.normalizer)))
    found = _Reading(tree, main_recommendation(tree, tools.normalizer), advice)
    with _cache_lock:
        _cache[doc_id] = found
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return found
