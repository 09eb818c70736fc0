"""Why this reply, in words a support agent reads: the plain-language summary of one turn's trace.

``summarize(trace, history)`` returns the summary (JSON-ready): which part of the question's relation chain the
delivered answer addresses, what the customer already tried, the confidence in words and number, and the closest
alternatives with why they lost. ``chat --explain`` prints its ``lines`` and the chat page's explain panel shows them;
the per-feature view stays behind ``--explain=details`` and the page's details switch (``feature_lines``).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from dtdialog.ranking.features import feature_group, feature_label

_LABEL = re.compile(r"^\s*([A-Za-z_\-]+)\s*\[(.*)\]\s*$")
#: Alternatives shown next to the chosen answer (the brief of a support agent: the one or two that came close).
ALTERNATIVES = 2


Found = tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]


def deciding_step(trace: dict[str, Any], answer_id: str | None, history: list[dict[str, Any]] | None = None) -> Found:
    """Return ``(turn, step, candidate)``: the turn trace and ranking step that scored ``answer_id``, and its
    candidate record.

    This turn's steps are searched last first, then earlier turns newest first (an answer picked from
    clarification options was ranked on the turn that offered it). Without ``answer_id`` (no answer delivered)
    the candidate is None and the step is this turn's last one, if any.
    """
    if not answer_id:
        steps = [s for s in trace.get("steps") or [] if isinstance(s, dict)]
        return trace, (steps[-1] if steps else None), None
    for turn in [trace, *reversed(history or [])]:
        if not isinstance(turn, dict):
            continue
        for step in reversed([s for s in turn.get("steps") or [] if isinstance(s, dict)]):
            for cand in step.get("candidates") or []:
                if isinstance(cand, dict) and cand.get("id") == answer_id:
                    return turn, step, cand
    return trace, None, None


def _split_label(label: str) -> tuple[str, str]:
    m = _LABEL.match(label)
    return (m.group(1), m.group(2).strip()) if m else (label.strip(), "")


def _whole(text: str) -> str:
    # the customer's words are quoted whole: a phrase cut mid-clause reads as a different statement
    return " ".join(str(text).split())


def _part_phrases(trace: dict[str, Any], part_index: int) -> dict[str, str]:
    """Return relation -> the question's own words for that relation in the step's part (DT-Q), whole; a trace
    recorded before the whole text was kept has the capped ``phrase`` only."""
    parts = [p for p in trace.get("parts") or [] if isinstance(p, dict)]
    part = next((p for p in parts if p.get("index") == part_index), None)
    return {r["relation"]: r.get("text") or r.get("phrase", "") for r in (part or {}).get("relations") or []
            if isinstance(r, dict) and r.get("relation")}


def _stems(text: str) -> set[str]:
    return {w[:4] for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2}


def _question_part(label: str, phrases: dict[str, str]) -> str:
    relation, words = _split_label(label)
    phrase = phrases.get(relation)
    # a follow-up's relation has the same name as the question's but other words: it is the customer's reply
    if phrase and (not words or _stems(words) & _stems(phrase)):
        return f"the {relation} part of the question (\"{_whole(phrase)}\")"
    return f"the {relation} part of the customer's reply (about {words})"


def _addresses(trace: dict[str, Any], step: dict[str, Any], cand: dict[str, Any]) -> list[str]:
    agreement = cand.get("agreement") or {}
    phrases = _part_phrases(trace, int(step.get("part_index") or 0))
    lines = []
    for chain in agreement.get("chains") or []:
        question, _, answer = str(chain).partition("->")
        a_relation, a_words = _split_label(answer)
        lines.append(f"It answers {_question_part(question, phrases)}"
                     + (f" with its {a_relation} part (about {a_words})." if answer.strip() else "."))
    for missing in agreement.get("missing") or []:
        lines.append(f"It does not address {_question_part(str(missing), phrases)}.")
    if not lines:
        lines.append("The question has no relation an answer must address: it was matched on its content words.")
    return lines


def _preferred_for(features: dict[str, Any], *, top: int = 3) -> str:
    """Return the sentence on what the ranker liked most about the answer ("" when it left no account)."""
    contributions = {k.split(".", 1)[1]: float(v) for k, v in features.items()
                     if k.startswith("contribution.") and k not in ("contribution.linear", "contribution.intercept")}
    if contributions:
        groups: dict[str, float] = {}
        for name, value in contributions.items():
            groups[feature_group(name)] = groups.get(feature_group(name), 0.0) + value
        # the numbers are logit shares: the details view shows them, the summary only ranks them
        liked = [g for g, v in sorted(groups.items(), key=lambda kv: -kv[1]) if v > 0][:top]
        if not liked:
            return ""
        rest = f", then {' and '.join(liked[1:])}" if len(liked) > 1 else ""
        return f"The ranker preferred it mostly for {liked[0]}{rest}."
    terms = [n for n in ("retrieval", "agreement", "topic_ratio", "question_match") if features.get(n)]
    if not terms:
        return ""
    return "It was scored on " + ", ".join(f"{feature_label(n)} {float(features[n]):.2f}" for n in terms) + "."


def _why_lost(alt: dict[str, Any], chosen: dict[str, Any] | None, step: dict[str, Any], offered: set[str]) -> str:
    reasons = []
    alt_id = alt.get("id")
    if alt_id in (step.get("already_tried") or {}):
        done = str(step["already_tried"][alt_id]).removeprefix("you already ")
        reasons.append(f"it repeats what the customer already did: {done}")
    for demotion in ("condition_clash", "presupposition", "branch_clash"):
        if alt_id in (step.get(demotion) or {}):
            reasons.append(str(step[demotion][alt_id]))
    moved = ((step.get("position") or {}).get("reasons") or {}).get(alt_id)
    if moved:
        reasons.append(f"it reads as a later step of a conversation ({moved})")
    agreement = alt.get("agreement") or {}
    if chosen is not None:
        alt_f, my_f = alt.get("features") or {}, chosen.get("features") or {}
        mine = (chosen.get("agreement") or {}).get("addressed", 0)
        theirs = agreement.get("addressed", 0)
        if theirs != mine:
            reasons.append(f"it answers {'fewer' if theirs < mine else 'more'} parts of the question ({theirs} of "
                           f"{agreement.get('required', 0)}, against {mine})")
        if my_f.get("continuation") and not alt_f.get("continuation"):
            reasons.append("the chosen answer is the next step of a logged dialogue after the answer already given")
        compared = [("dense", "less similar in meaning"), ("bm25", "fewer shared words"),
                    ("retrieval", "a weaker keyword match"), ("topic_ratio", "less about the question's topic")]
        if theirs == mine:
            compared.append(("agreement", "a weaker rhetorical agreement"))
        for name, words in compared:
            if isinstance(alt_f.get(name), (int, float)) and isinstance(my_f.get(name), (int, float)) \
                    and alt_f[name] < my_f[name] - 0.02:
                reasons.append(f"{words} ({alt_f[name]:.2f} against {my_f[name]:.2f})")
        score = f"score {float(alt.get('score', 0)):.2f} against {float(chosen.get('score', 0)):.2f}"
    else:
        score = f"score {float(alt.get('score', 0)):.2f}"
    if not reasons:
        reasons.append("offered as an option" if alt_id in offered else "the ranker scored it lower overall")
    return f"{alt_id}: {'; '.join(reasons)} ({score})."


#: Why options were offered instead of an answer (the decision's ``offered_because``), in an agent's words.
OFFERED_BECAUSE = {
    "close": "{n} answers came too close to pick one, so the customer was asked to choose",
    "unsure": "no answer was sure enough and the confidence had run out, so the {n} closest were offered before a "
              "hand-off",
    "none_fit": "none of the options before fitted, so {n} others as strong were offered",
}


def summarize(trace: dict[str, Any], history: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Return the plain-language summary of a turn trace; ``lines`` holds the sentences to show, in order."""
    from dtdialog.selection.confidence import confidence_words

    decision = trace.get("decision") or {}
    kind = str(decision.get("kind") or "none")
    answer_id = decision.get("answer_id") or None
    turn, step, chosen = deciding_step(trace, answer_id, history)
    out: dict[str, Any] = {"kind": kind, "answer_id": answer_id, "addresses": [], "tried": [], "confidence": None,
                           "alternatives": [], "lines": []}
    lines = out["lines"]
    if answer_id:
        lines.append(f"Chose answer {answer_id}.")
    elif kind == "clarify":
        options = [o for o in decision.get("options") or [] if isinstance(o, dict) and o.get("answer_id")]
        because = OFFERED_BECAUSE.get(str(decision.get("offered_because") or "close"), OFFERED_BECAUSE["close"])
        lines.append(f"No answer delivered: {because.format(n=len(options))}.")
    else:
        reason = decision.get("reason") or ""
        lines.append(f"No answer delivered in this turn (reply: {kind.replace('_', ' ')}"
                     + (f"; {reason}" if isinstance(reason, str) and reason else "") + ").")
    if chosen is not None and step is not None:
        out["addresses"] = _addresses(turn, step, chosen)
        lines.extend(out["addresses"])
        liked = _preferred_for(chosen.get("features") or {})
        if liked:
            lines.append(liked)
    if step is not None:
        out["tried"] = [str(t.get("text")) for t in step.get("tried") or [] if isinstance(t, dict) and t.get("text")]
        if out["tried"]:
            demoted = len(step.get("already_tried") or {})
            lines.append("The customer already tried: " + "; ".join(out["tried"]) + "."
                         + (f" {demoted} answer(s) repeating that were moved down." if demoted else ""))
    confidence = decision.get("confidence")
    if isinstance(confidence, (int, float)):
        out["confidence"] = {"value": float(confidence), "words": confidence_words(float(confidence))}
        lines.append(f"Confidence {float(confidence):.2f}: {confidence_words(float(confidence))}.")
    if step is not None:
        alts = [c for c in step.get("candidates") or [] if isinstance(c, dict) and c.get("id") != answer_id]
        offered = {str(o.get("answer_id")) for o in decision.get("options") or [] if isinstance(o, dict)}
        out["alternatives"] = [{"id": c.get("id"), "score": c.get("score"), "why": _why_lost(c, chosen, step, offered)}
                               for c in alts[:ALTERNATIVES]]
        if out["alternatives"]:
            head = "Closest alternatives" if chosen is not None else "Top candidates"
            lines.append(f"{head}:")
            lines.extend("  " + a["why"] for a in out["alternatives"])
    return out


def feature_lines(features: dict[str, Any], *, top: int = 6) -> list[str]:
    """Return the per-feature view of a candidate: the learned ranker's largest contributions, labelled."""
    parts = {k.split(".", 1)[1]: float(v) for k, v in features.items()
             if k.startswith("contribution.") and k not in ("contribution.linear", "contribution.intercept")}
    if parts:
        ranked = sorted(parts.items(), key=lambda kv: -abs(kv[1]))[:top]
        return [f"{feature_label(name)} ({name}) {value:+.2f}" for name, value in ranked]
    # no contributions (the rule scorer, or a learned ranker's answer that was not its first choice): the values
    return [f"{feature_label(name)} ({name}) {float(features[name]):.2f}" for name in _SHOWN_VALUES
            if isinstance(features.get(name), (int, float))]


def readable_value(value: Any) -> str:
    """Return ``value`` as an agent reads it: numbers rounded (0.95, 15.6, 24), yes/no, no quotes or brackets."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        # two decimals below 10 keep shares and thresholds apart; beyond that one is enough to compare
        text = f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
        text = text.rstrip("0").rstrip(".") if "." in text else text
        return "0" if text == "-0" else text
    if isinstance(value, dict):
        return "(" + describe_signals(value) + ")" if value else "none"
    if isinstance(value, (list, tuple, set, frozenset)):
        return "/".join(readable_value(v) for v in value) or "none"
    return "none" if value is None else str(value)


def describe_signals(signals: dict[str, Any]) -> str:
    """Return a signals dict as "key value" pairs: ``words 24, english share 1, domain score 0.95``."""
    return ", ".join(f"{str(key).replace('_', ' ')} {readable_value(value)}" for key, value in signals.items())


_DICT_NOTE = re.compile(r"^(?P<head>[^{]*?)(?P<body>\{.*\})\s*$", re.DOTALL)


def readable_note(note: str) -> str:
    """Return a trace note with a Python dict written into it ("in scope: {...}") as readable "key value" text."""
    m = _DICT_NOTE.match(str(note))
    if m is None:
        return str(note)
    try:
        value = ast.literal_eval(m.group("body"))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return str(note)
    return m.group("head") + describe_signals(value) if isinstance(value, dict) else str(note)


#: The features whose values the details view shows when the scorer left no contributions: the rule scorer's
#: terms and the learned ranker's main retrieval and discourse signals.
_SHOWN_VALUES = ("retrieval", "lexical", "bm25", "dense", "dense_csls", "term_overlap", "agreement", "addressed_share",
                 "sg", "continuation", "question_match", "step_match", "topic_ratio")
