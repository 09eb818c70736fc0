"""Build the explain panel of one turn: the question's DT, the chosen answer's DT and the matched chains, as pictures,
and the plain-language summary of why the reply was chosen (``dtdialog.dialogue.explanation``)."""

from __future__ import annotations

from typing import Any

from dtdialog.api.explain import chains_to_svg
from dtdialog.api.models import Explanation
from dtdialog.dialogue.explanation import deciding_step, feature_lines, summarize


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
    # The verdict is about the delivered answer only, as ranked (this turn, else the turn that offered it as an
    # option): with no answer delivered there is no answer to agree, and none is claimed.
    _, _, chosen = deciding_step(trace, answer_id, history or [])
    agreement = chosen.get("agreement") if chosen is not None else None
    if isinstance(agreement, dict):
        out.verdict = bool(agreement.get("verdict"))
        out.agreement_score = float(agreement.get("score") or 0.0)
        out.chains = [str(c) for c in agreement.get("chains") or []]
        out.missing = [str(m) for m in agreement.get("missing") or []]
        out.chains_svg = chains_to_svg(out.chains, missing=out.missing)
    out.summary = summarize(trace, history or [])["lines"]
    out.details = feature_lines(chosen.get("features") or {}) if chosen is not None else []
    return out
