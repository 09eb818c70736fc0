"""Build the explain panel of one turn: the question's DT, the chosen answer's DT and the matched chains, as pictures."""

from __future__ import annotations

from typing import Any

from dtdialog.api.explain import chains_to_svg
from dtdialog.api.models import Explanation


def _candidate_agreement(trace: dict[str, Any], answer_id: str) -> dict[str, Any] | None:
    steps = [trace] + [s for s in trace.get("steps") or [] if isinstance(s, dict)]
    for holder in steps:
        for cand in holder.get("candidates") or []:
            if isinstance(cand, dict) and cand.get("id") == answer_id and isinstance(cand.get("agreement"), dict):
                return cand["agreement"]
    return None


def _agreement_of(trace: dict[str, Any], answer_id: str | None, history: list[dict[str, Any]]) -> dict[str, Any] | None:
    # The delivered answer's agreement: in this turn's candidates, else in an earlier turn's (an answer
    # picked from clarification options was ranked on the turn that offered it).
    if answer_id:
        for t in [trace] + list(reversed(history)):
            found = _candidate_agreement(t, answer_id) if isinstance(t, dict) else None
            if found is not None:
                return found
        return None
    cands = trace.get("candidates") or []
    first = cands[0] if cands and isinstance(cands[0], dict) else None
    return first.get("agreement") if first and isinstance(first.get("agreement"), dict) else None


def explain_turn(service: Any, *, result: Any, user_text: str, session_question: str = "",
                 history: list[dict[str, Any]] | None = None) -> Explanation:
    """Return the explanation of a ``TurnResult`` (call on the engine thread).

    The question is the one this turn planned (trace), else the session's current question
    (a follow-up turn), else the user's text.
    """
    from parsers.render import tree_to_svg
    from parsers.tree import DiscourseTree

    trace = result.trace or {}
    question = trace.get("question")
    if not (isinstance(question, str) and question.strip()):
        question = session_question if session_question.strip() else user_text
    qtree_data = trace.get("question_tree")
    qtree = DiscourseTree.from_dict(qtree_data) if isinstance(qtree_data, dict) else service.parser().parse(question)
    out = Explanation(question=question, question_tree=qtree.to_dict(), question_svg=tree_to_svg(qtree))
    answer_id = result.answer_id
    if answer_id:
        selector = service.runtime().selector
        doc = selector.document(answer_id)
        if doc is not None:
            # the DT the engine analysed when it ranked this answer (its cache), not a second parse
            atree = selector.answer_tree(doc)
            out.answer_id, out.answer = answer_id, doc.text
            out.answer_tree, out.answer_svg = atree.to_dict(), tree_to_svg(atree)
    agreement = _agreement_of(trace, answer_id, history or [])
    if agreement is not None:
        out.verdict = bool(agreement.get("verdict"))
        out.agreement_score = float(agreement.get("score") or 0.0)
        out.chains = [str(c) for c in agreement.get("chains") or []]
        out.missing = [str(m) for m in agreement.get("missing") or []]
    out.chains_svg = chains_to_svg(out.chains, missing=out.missing)
    return out
