"""The per-turn trace: a JSON-ready record of what the engine saw, queried, scored and decided.

Keys: ``turn``, ``user_text``, ``intent``, ``state_before``/``state_after``, ``question``,
``question_compact`` and ``question_tree`` (DT-Q), ``parts``, ``steps`` (one per ranking: query,
requirements, candidates with scores/features/agreement, rejected ones), ``candidates`` (the
deciding step's, repeated at top level for readers), ``decision`` and ``notes``.
``format_trace`` prints it for ``--explain``.
"""

from __future__ import annotations

import time
from typing import Any

from dtdialog.dialogue.explanation import feature_lines, readable_note, readable_value, summarize
from dtdialog.ranking.features import feature_label
from dtdialog.selection.selector import RankOutcome
from dtdialog.understanding.subtrees import QuestionPart, QuestionPlan


class TurnTrace:
    """Collects one turn's trace; ``to_dict`` returns the JSON-ready record."""

    def __init__(self, *, session_id: str, turn: int, user_text: str, state_before: str) -> None:
        self.data: dict[str, Any] = {
            "session_id": session_id, "turn": turn, "user_text": user_text, "intent": None,
            "state_before": state_before, "state_after": state_before, "steps": [], "candidates": [],
            "decision": None, "notes": [],
        }
        self._started = time.perf_counter()

    def intent(self, kind: str, **extra: Any) -> None:
        self.data["intent"] = kind
        if extra:
            self.data["intent_detail"] = extra

    def plan(self, plan: QuestionPlan, *, full: bool) -> None:
        """Record DT-Q: compact form and parts always, the full tree dict when ``full``."""
        self.data["question"] = plan.question
        self.data["question_compact"] = plan.tree.to_compact()
        self.data["question_kind"] = plan.kind
        self.data["parts"] = [_part_record(p) for p in plan.parts]
        if full:
            self.data["question_tree"] = plan.tree.to_dict()

    def step(self, outcome: RankOutcome, *, step: int) -> None:
        """Record one ranking step: what its stages wrote into ``outcome.record`` while deciding."""
        record = {"step": step, **outcome.record.to_dict()}
        self.data["steps"].append(record)
        self.data["candidates"] = record["candidates"]

    def note(self, text: str) -> None:
        self.data["notes"].append(text)

    def decide(self, kind: str, *, state_after: str, answer_id: str | None = None, **extra: Any) -> None:
        self.data["decision"] = {"kind": kind, "answer_id": answer_id, **extra}
        self.data["state_after"] = state_after

    def to_dict(self) -> dict[str, Any]:
        self.data["elapsed_ms"] = round((time.perf_counter() - self._started) * 1000, 3)
        return self.data


def _part_record(part: QuestionPart) -> dict[str, Any]:
    """Return the part's summary plus its whole clauses: explanations quote the customer, never a capped phrase."""
    record = part.to_dict()
    record["clauses"] = [e.text for e in part.edus]
    for rel, instance in zip(record["relations"], part.relations):
        rel["text"] = instance.phrase()
    return record


def contribution_summary(features: dict[str, Any], *, top: int = 6, labels: bool = False) -> str:
    """Return "learned ranker logit L: name +x, ..." for the features that moved the logit most ("" if none).

    Only the chosen answer of a step carries ``contribution.<feature>`` (``LearnedScorer``). ``labels``: each
    feature as "agent-readable label (name)".
    """
    parts = {k.split(".", 1)[1]: float(v) for k, v in features.items()
             if k.startswith("contribution.") and k not in ("contribution.linear", "contribution.intercept")}
    if not parts:
        return ""
    ranked = sorted(parts.items(), key=lambda kv: -abs(kv[1]))[:top]
    logit = features.get("model_logit")
    head = f"learned ranker logit {logit:+.2f}" if isinstance(logit, (int, float)) else "learned ranker"
    def shown(name: str) -> str:
        return f"{feature_label(name)} ({name})" if labels else name

    return head + ": " + ", ".join(f"{shown(name)} {value:+.2f}" for name, value in ranked)


def format_trace(trace: dict[str, Any], *, max_candidates: int = 5, details: bool = False,
                 history: list[dict[str, Any]] | None = None) -> str:
    """Return a readable multi-line rendering of a turn trace (for ``dtdialog chat --explain``), ending with the
    plain-language summary (``dtdialog.dialogue.explanation``); ``details`` adds the ranker's per-feature contributions.
    ``history`` is the session's earlier traces (where an answer picked from options was ranked)."""
    lines = [f"--- turn {trace.get('turn')}: intent={trace.get('intent')} "
             f"{trace.get('state_before')} -> {trace.get('state_after')} ({trace.get('elapsed_ms', 0):.1f} ms)"]
    lines.extend(_question_lines(trace))
    for step in trace.get("steps", []):
        query = step.get("query", {})
        lines.append(f"step A{step.get('step', 0) + 1} (part Q{step.get('part_index', 0) + 1})")
        if step.get("followup_dt"):
            lines.append(f"  follow-up DT: {step['followup_dt']}")
        lines.append(f"  must address: {', '.join(step.get('requirements') or []) or '(factual: entity overlap only)'}")
        lines.append(f"  keywords: {' '.join(query.get('keywords', [])[:20])}")
        for term in query.get("rr_terms", [])[:6]:
            lines.append(f"  RR query: {term}")
        if query.get("exclude_ids"):
            lines.append(f"  excluding: {', '.join(query['exclude_ids'])}")
        for c in step.get("constraints", []):
            lines.append(f"  constraint ({c['kind']}): {' '.join(c['words'])}")
        for cand in step.get("candidates", [])[:max_candidates]:
            agr = cand["agreement"]
            feats = cand.get("features", {})
            lines.append(f"  + {cand['id']}  score={cand['score']:.3f} {retrieval_text(feats)} "
                         f"agreement={agr['score']:.2f} ({agr['addressed']}/{agr['required']})"
                         + (" continuation" if feats.get("continuation") else "")
                         + (f" violations={int(feats['constraint_violations'])}" if feats.get("constraint_violations") else ""))
            for chain in agr.get("chains", []):
                lines.append(f"      {chain}")
            if details:  # the learned ranker's account of its pick, else the scorer's labelled terms
                why = contribution_summary(feats, labels=True) or "; ".join(feature_lines(feats))
                if why:
                    lines.append(f"      {why}")
        lines.extend(_tried_lines(step))
        lines.extend(_rejected_lines(step, shown=max_candidates))
    decision = trace.get("decision") or {}
    lines.append(f"decision: {decision.get('kind')}" + (f" {decision['answer_id']}" if decision.get("answer_id") else "")
                 + _confidence_text(decision) + _reason_text(decision))
    for note in trace.get("notes", []):
        lines.append(f"note: {readable_note(note)}")
    lines.append("why this reply:")
    lines.extend("  " + line for line in summarize(trace, history)["lines"])
    return "\n".join(lines)


def _question_lines(trace: dict[str, Any]) -> list[str]:
    """Return the question and this turn's message, whole, then DT-Q's shape and its parts' relations."""
    lines = []
    if trace.get("question"):
        lines.append(f"question: {trace['question']}")
    said = " ".join(str(trace.get("user_text") or "").split())
    if said and said != " ".join(str(trace.get("question") or "").split()):
        lines.append(f"message: {said}")  # a follow-up or choice: the turn's own words, whole
    if trace.get("question_compact"):
        lines.append(f"DT-Q ({trace.get('question_kind')}): {trace['question_compact']}")
        for part in trace.get("parts", []):
            # the relation's whole words (traces recorded before they were kept have the capped phrase)
            rels = ", ".join(f"{r['relation']}[{r.get('text') or r['phrase']}]" for r in part.get("relations", [])) \
                or "no non-default relation"
            lines.append(f"  part Q{part['index'] + 1}: {rels}")
    return lines


def retrieval_text(features: dict[str, Any]) -> str:
    """Return how well retrieval matched a candidate, from the features its scorer wrote.

    The rule scorer writes ``retrieval`` (the lexical score over the list's best); the learned ranker has no
    such feature but ``lexical`` (the same ratio, 0 for an answer only the dense search found) and ``dense``
    (the MiniLM cosine). A rejected candidate was never scored: it has neither.
    """
    if isinstance(features.get("retrieval"), (int, float)):
        return f"retrieval={features['retrieval']:.2f}"
    if isinstance(features.get("lexical"), (int, float)) or isinstance(features.get("dense"), (int, float)):
        return f"lexical={float(features.get('lexical', 0.0)):.2f} dense={float(features.get('dense', 0.0)):.2f}"
    return "retrieval=n/a"


def _rejected_lines(step: dict[str, Any], *, shown: int) -> list[str]:
    """Return the ``--explain`` line of a step's rejected candidates: the true count, the ones listed, each
    with the reason the choose stage recorded (``rejected_reasons``)."""
    rejected = step.get("rejected") or []
    if not rejected:
        return []
    total = int(step.get("rejected_total") or len(rejected))
    listed = rejected[:shown]
    head = f"  rejected ({total}" + (f", first {len(listed)} shown" if len(listed) < total else "") + "): "
    return [head + ", ".join(f"{c['id']} ({_rejection_text(c)})" for c in listed)]


def _rejection_text(cand: dict[str, Any]) -> str:
    reason = cand.get("reason") or ""
    missing = (cand.get("agreement") or {}).get("missing") or []
    if reason == "no agreement" and missing:
        return "no agreement: missing " + "; ".join(missing)
    if reason == "constraint":
        return "violates the customer's constraint"
    return reason or "not kept"


# already tried: what the customer reported done, and the answers demoted for repeating it
def _tried_lines(step: dict[str, Any]) -> list[str]:
    """Return the ``--explain`` lines of a step's tried actions and the answers demoted for repeating one."""
    lines = []
    tried = step.get("tried") or []
    if tried:
        lines.append("  customer already did: " + "; ".join(
            f"{t['text']} ({t['verb_class']}" + (f", {t['relation']} satellite)" if t.get("relation") else ")")
            for t in tried))
    for answer_id, why in (step.get("already_tried") or {}).items():
        lines.append(f"  demoted {answer_id}: its main recommendation repeats what {why}")
    for answer_id, why in {**(step.get("condition_clash") or {}), **(step.get("presupposition") or {}),
                           **(step.get("branch_clash") or {})}.items():
        lines.append(f"  demoted {answer_id}: {why}")
    lines.extend(_logged_opening_lines(step.get("logged_question") or {}))
    return lines


def _logged_opening_lines(match: dict[str, Any]) -> list[str]:
    """Return the ``--explain`` line of the logged opening nearest the customer's first words, and whether it counts."""
    if not match:
        return []
    verdict = ("counts for " + str(match.get("answer")) if match.get("counts") else
               "its answer is no candidate" if not match.get("candidate") else "below the bar")
    return [f"  logged opening nearest: {match.get('dialogue')} (cosine {match.get('cosine', 0):.2f}, gap "
            f"{match.get('gap', 0):.2f}, coverage {match.get('coverage', 0):.2f}) -> {match.get('probability', 0):.2f}, "
            f"{verdict}"]


# --- calibrated confidence ---
def _confidence_text(decision: dict[str, Any]) -> str:
    """Return " (confidence 0.82: I'm fairly sure (82%))" for a decision that carries a confidence, else ""."""
    from dtdialog.selection.confidence import confidence_words

    value = decision.get("confidence")
    if not isinstance(value, (int, float)):
        return ""
    detail = f", missing detail: {decision['missing_detail']}" if decision.get("missing_detail") else ""
    return f" (confidence {value:.2f}: {confidence_words(value)}{detail})"


def _reason_text(decision: dict[str, Any]) -> str:
    """Return " (reason: domain; words 3, domain score 0.2)" for a refusal's recorded reason and signals, else ""."""
    said = [readable_value(decision[k]) for k in ("reason", "missing") if decision.get(k)]
    if isinstance(decision.get("signals"), dict) and decision["signals"]:
        said.append(readable_value(decision["signals"]).strip("()"))
    return f" (reason: {'; '.join(said)})" if said else ""
