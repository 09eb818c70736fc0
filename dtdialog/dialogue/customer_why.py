"""Why this answer, in words a customer reads: one sentence computed from a turn's trace.

``customer_why(trace, history)`` says which part of the customer's message the delivered answer takes up, quoted in
their own words as whole clauses, and what it leaves out because they said they already did it (only what its main clause
does not name). It never names an
answer id, a score or a ranker feature: those are for agents (``dtdialog.dialogue.explanation``). ``chat`` prints it under
each answer and the API returns it as the turn's ``why``.
"""

from __future__ import annotations

from typing import Any

from dtdialog.dialogue.explanation import deciding_step
from index.vocabulary import SENTENCE_BREAK, content_words, words_of

#: Quoted words longer than this lose their later clauses (whole ones, never part of one).
QUOTE_CHARS = 160
_TRIM = " \t\n,;:.-"
#: first words of a reported action that read after "you already did" besides an "-ed" verb ("had it tested")
_DONE_HEADS = frozenset({"had", "got", "put", "did", "have", "fitted"})


def customer_why(trace: dict[str, Any], history: list[dict[str, Any]] | None = None) -> str | None:
    """Return the plain-language reason for a delivered answer, or None for any other reply (or no record of it).

    ``history``: the session's earlier traces, where an answer picked from offered options was ranked.
    """
    decision = trace.get("decision") or {}
    answer_id = decision.get("answer_id")
    if decision.get("kind") != "answer" or not answer_id:
        return None
    turn, step, chosen = deciding_step(trace, answer_id, history)
    if step is None or chosen is None:
        return None
    reports = [(k, " ".join(str(t["text"]).split()).strip(_TRIM)) for k, t in enumerate(step.get("tried") or [])
               if isinstance(t, dict) and t.get("text")]
    tried = [t for _, t in reports if t]
    # said only of what the answer's main clause does not name: a demotion reads the main recommendation alone
    named = set((step.get("mentions_tried") or {}).get(answer_id, ()))
    left_out = [t for k, t in reports if t and k not in named]
    part = _part(turn, step)
    said = _quote(_addressed_clauses(part, tried)) if part else ""
    if not said:
        return None
    agreed = bool((chosen.get("agreement") or {}).get("chains"))
    sentence = f'This {"answers" if agreed else "is about"} "{said}"'
    reply = _followup_words(turn, step)
    if reply:
        sentence += f', now that you said "{reply}"'
    if left_out and answer_id not in (step.get("already_tried") or {}):
        sentence += "; it leaves out " + _left_out(left_out)
    return sentence + "."


def _left_out(tried: list[str]) -> str:
    """Return, for non-empty reports, "what you already did: replaced the battery" and/or "what you ruled out: "the fuses are fine"".

    A report that starts with its verb reads after "did"; any other ("the fuses are fine", "it is new") is quoted.
    """
    done = [t for t in tried if t.split()[0].endswith("ed") or t.split()[0] in _DONE_HEADS]
    said = [f'"{t}"' for t in tried if t not in done]
    parts = ([f"what you already did: {', '.join(done)}"] if done else []) + \
        ([f"what you ruled out: {', '.join(said)}"] if said else [])
    if len(parts) == 2:  # one list after the other's colon would read as part of it
        return f"what you already did ({', '.join(done)}) and what you ruled out ({', '.join(said)})"
    return parts[0]


def transcript_whys(transcript: list[dict[str, Any]], traces: list[dict[str, Any]]) -> dict[int, str]:
    """Return transcript index -> the why of that bot answer, for a stored session (a reloaded chat page).

    Matched from the end, answer id by answer id: the oldest traces may have been pruned, never the newest.
    """
    answers = [(i, m.get("answer_id")) for i, m in enumerate(transcript)
               if isinstance(m, dict) and m.get("role") == "bot" and m.get("answer_id")]
    ranked = [(k, (t.get("decision") or {}).get("answer_id")) for k, t in enumerate(traces)
              if isinstance(t, dict) and (t.get("decision") or {}).get("kind") == "answer"]
    out: dict[int, str] = {}
    for (i, said), (k, traced) in zip(reversed(answers), reversed(ranked)):
        if said != traced:
            break
        why = customer_why(traces[k], traces[:k])
        if why:
            out[i] = why
    return out


def needs_history(trace: dict[str, Any]) -> bool:
    """Return True when the trace's delivered answer was ranked on an earlier turn (picked from options)."""
    answer_id = (trace.get("decision") or {}).get("answer_id")
    return bool(answer_id) and deciding_step(trace, answer_id)[2] is None


def _part(turn: dict[str, Any], step: dict[str, Any]) -> dict[str, Any] | None:
    index = int(step.get("part_index") or 0)
    parts = [p for p in turn.get("parts") or [] if isinstance(p, dict)]
    return next((p for p in parts if p.get("index") == index), parts[0] if parts else None)


def _addressed_clauses(part: dict[str, Any], tried: list[str]) -> list[str]:
    """Return the part's clauses the answer takes up: all but those reporting what was already tried (all when
    that leaves none). Not the DT's nucleus alone: a parser's nuclearity can put the problem in the satellite."""
    clauses = [str(c) for c in part.get("clauses") or [] if str(c).strip()] or [str(part.get("text") or "")]
    kept, dropped = [], False
    for clause in clauses:
        # "already changed the filter | and made sure its tight": a clause joined on to a report goes on with it
        dropped = any(_reports(clause, t) for t in tried) or (dropped and words_of(clause)[:1] in (["and"], ["or"]))
        if not dropped:
            kept.append(clause)
    return kept or clauses


def _reports(clause: str, tried: str) -> bool:
    """Return True when ``clause`` is where the customer reported ``tried`` (most of its words are there)."""
    said = set(words_of(clause))
    # content words only: "oil leaking near the oil filter" is not where "changed the filter" was told
    words = [w for w in content_words(words_of(tried)) if len(w) > 2]
    return bool(words) and sum(w in said for w in words) >= 0.6 * len(words)


def _quote(clauses: list[str]) -> str:
    """Return the clauses as one quotation, cut only between clauses or sentences, without the end's punctuation."""
    kept: list[str] = []
    # a long unsegmented clause still ends at a sentence: the quote stays one short line
    pieces = [p for c in clauses for p in SENTENCE_BREAK.split(" ".join(c.split())) if p]
    for clause in pieces:
        if kept and len(" ".join([*kept, clause])) > QUOTE_CHARS:
            return " ".join(kept).rstrip(_TRIM) + " …"
        kept.append(clause)
    return " ".join(kept).strip(_TRIM)


def _followup_words(turn: dict[str, Any], step: dict[str, Any]) -> str:
    """Return what the customer said in a follow-up turn (its statements, whole sentences), "" on a first turn."""
    text = str(turn.get("user_text") or "")
    if not step.get("followup_dt") or not text.strip() or text.strip() == str(turn.get("question") or "").strip():
        return ""
    sentences = [s for s in SENTENCE_BREAK.split(" ".join(text.split())) if s]
    statements = [s for s in sentences if not s.endswith("?")] or sentences
    return _quote(statements)
