"""Build the explain panel of one turn: the question's DT, the chosen answer's DT and the matched chains, as pictures."""

from __future__ import annotations

from typing import Any

from dtdialog.api.explain import chains_to_svg
from dtdialog.api.models import Explanation


def _find(trace: Any, key: str) -> Any:
    # The trace is a nested dict; the first value under ``key`` found depth-first wins.
    if isinstance(trace, dict):
        if key in trace and trace[key] not in (None, "", [], {}):
            return trace[key]
        for value in trace.values():
            found = _find(value, key)
            if found is not None:
                return found
    elif isinstance(trace, list):
        for value in trace:
            found = _find(value, key)
            if found is not None:
                return found
    return None


def _agreement_of(trace: dict[str, Any], answer_id: str | None) -> dict[str, Any] | None:
    # Prefer the agreement recorded for the delivered answer; else the first one in the trace.
    for key in ("candidates", "ranked", "hits"):
        for cand in trace.get(key) or []:
            if isinstance(cand, dict) and answer_id and cand.get("id", cand.get("answer_id")) == answer_id:
                if isinstance(cand.get("agreement"), dict):
                    return cand["agreement"]
    found = _find(trace, "agreement")
    return found if isinstance(found, dict) else None


def explain_turn(service: Any, *, result: Any, user_text: str) -> Explanation:
    """Return the explanation of a ``TurnResult`` (call on the engine thread)."""
    from parsers.render import tree_to_svg
    from parsers.tree import DiscourseTree

    trace = result.trace or {}
    question = _find(trace, "question")
    question = question if isinstance(question, str) and question.strip() else user_text
    qtree_data = _find(trace, "question_tree")
    qtree = DiscourseTree.from_dict(qtree_data) if isinstance(qtree_data, dict) else service.parser().parse(question)
    out = Explanation(question=question, question_tree=qtree.to_dict(), question_svg=tree_to_svg(qtree))
    answer_id = result.answer_id
    if answer_id:
        doc = service.runtime().index.get(answer_id)
        if doc is not None:
            atree = DiscourseTree.from_dict(doc.tree) if doc.tree else service.parser().parse(doc.text)
            out.answer_id, out.answer = answer_id, doc.text
            out.answer_tree, out.answer_svg = atree.to_dict(), tree_to_svg(atree)
    agreement = _agreement_of(trace, answer_id)
    if agreement is not None:
        out.verdict = bool(agreement.get("verdict"))
        out.agreement_score = float(agreement.get("score") or 0.0)
        out.chains = [str(c) for c in agreement.get("chains") or []]
        out.missing = [str(m) for m in agreement.get("missing") or []]
    out.chains_svg = chains_to_svg(out.chains, missing=out.missing)
    return out
