"""A new problem told mid-question: a reply that belongs to no part of the open question starts a question of its own.

While options are on screen, a customer may move on to another fault ("it squeals when I brake" under options about a
no-start): read as a pick it matches nothing, and the options come back until a hand-off. Only there is a reply read
for a new problem. After an answer or a request for detail the reply is the follow-up or the detail asked for, however
new its words: "it's from the front right wheel" after an answer on a grinding noise, and every reply it fired on after
a request for detail in the simulated-customer run on IRC ("I meant like a command line tool"), were misread. A reply
is a new problem when all of these hold:

* it does not open as an answer to the bot ("yes, ...", "no, ...", "it did") or point back at its problem ("it's
  ...", "that ..."): those reply to what is on screen;
* it names at least ``MIN_TERMS`` things the index knows, and none of the open question, its replies or the answer
  or options on screen (words in half the domain's dialogues, "car" or "engine", name no topic and are left out);
* the scope gate reads it, alone, as a question in the domain (so "purple elephants" stays a reply to re-ask);
* it retrieves answers alone, and they share none of the open step's first ``DEPTH``.

The last test is the strong one: a real follow-up, read alone, retrieves some of its question's answers, and another
question's opening almost never does (``tests/dtdialog/test_topic_shift.py`` holds it to every built-in follow-up).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dtdialog.dialogue import memory
from dtdialog.dialogue.context import DialogueContext
from dtdialog.dialogue.session import SessionRecord
from dtdialog.dialogue.steps import Steps
from dtdialog.understanding.subtrees import QuestionPlan

#: a reply naming fewer index terms than this says too little to be a problem of its own
MIN_TERMS = 2
#: a stem in at least this share of the domain's dialogues (the scope gate's profile) names no topic
COMMON_SHARE = 0.5
#: how many of each ranking's first answers are compared
DEPTH = 10
# a reply opening like this answers what is on screen, whatever follows
_ANSWER_OPENER = re.compile(r"^\s*(?:yes|yeah|yep|yup|no|nope|nah|not|ok|okay|sure|right|correct|exactly|also|"
                            r"it (?:did|does|didn't|doesn't|was|wasn't|is|isn't)|it's|its|this|that|that's|then|still|"
                            r"same|and|but)\b")


@dataclass(frozen=True)
class NewProblem:
    """Why a reply opens a new problem (for the trace), and its plan: the question starts from it, not parsed again."""

    why: str
    plan: QuestionPlan


class TopicShift:
    """Tells a reply that reports a new problem from one that belongs to the open question."""

    def __init__(self, ctx: DialogueContext, steps: Steps) -> None:
        self.ctx = ctx
        self.steps = steps

    def new_problem(self, record: SessionRecord, text: str) -> NewProblem | None:
        """Return why ``text`` opens a new problem, with its plan, or None when it belongs to the open question."""
        if not record.question or _ANSWER_OPENER.match(text.lower()):
            return None
        selector = self.ctx.selector
        terms = self._topical(selector.terms_of_text(text))
        if len(terms) < MIN_TERMS:
            return None
        if terms & (selector.terms_of_text(" ".join([record.question, *record.followups])) | self._on_screen(record)):
            return None
        scope = self.ctx.scope
        if scope is not None and not scope.check(text).in_scope:
            return None
        open_step = selector.rank_outcome(question=self.steps.plan(record), step=record.step,
                                          followups=record.step_followups, size=DEPTH)
        plan = selector.plan(text)
        alone = selector.rank_outcome(question=plan, size=DEPTH)
        # a reply that retrieves nothing says nothing the index can tell apart from the open question
        if not alone.candidates or _ids(open_step) & _ids(alone):
            return None
        return NewProblem(why=f"it names {', '.join(sorted(terms)[:4])}, nothing of the open question, and "
                              f"retrieves none of its first {DEPTH} answers", plan=plan)

    def _topical(self, terms: frozenset[str]) -> frozenset[str]:
        scope = self.ctx.scope
        if scope is None:
            return terms
        profile = scope.profile()
        # the dialogues alone: the glossary's entries describe the domain, they are not what customers ask about
        common = COMMON_SHARE * profile.n
        return frozenset(t for t in terms if " " in t or len(profile.postings.get(t, ())) < common)

    def _on_screen(self, record: SessionRecord) -> frozenset[str]:
        # a reply builds on what the bot last showed: the answer it replies to, or the options it picks from
        shown = [o.answer_id for o in memory.pending_of(record).options] if record.pending else record.delivered[-1:]
        selector = self.ctx.selector
        docs = [selector.document(i) for i in shown if i]
        return frozenset().union(*(selector.answer_terms(d) for d in docs if d is not None))


def _ids(outcome) -> set[str]:
    """Return the answers a text retrieves: its first ``DEPTH`` candidates, counting those the presupposition stage
    took out (written for another situation, they still say what the text is about) at the scores they had."""
    pool = [*outcome.candidates, *(c for c in outcome.rejected if c.features.get("presupposition"))]
    return {c.document.id for c in sorted(pool, key=lambda c: -c.score)[:DEPTH]}
