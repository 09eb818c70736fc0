"""Hand off: when the bot stops answering, and a reason that is true.

The bot hands off when the customer asks for a person, when ``max_rejections`` answers were turned down,
or when its confidence runs out (``max_failures`` steps without an answer it is sure of). Once handed off,
the bot's side of the session is over: later messages join the transcript for the person, and only a new
conversation (a reset phrase) brings the bot back.
"""

from __future__ import annotations

from enum import Enum

from dtdialog.dialogue.replies import Replies


class HandoffReason(str, Enum):
    """Why a session was handed to a person; each names one fact of the session."""

    ASKED = "asked"
    REJECTED = "rejected"
    UNSURE = "unsure"
    NO_ANSWER = "no_answer"
    NONE_FIT = "none_fit"
    NO_DETAIL = "no_detail"
    RULED_OUT = "ruled_out"

    def text(self, replies: Replies, *, rejected: int) -> str:
        """Return the reason in the customer's words; ``rejected`` is how many answers they turned down."""
        if self is HandoffReason.REJECTED:
            return replies.handoff_failures_reason(rejected)
        return {HandoffReason.ASKED: replies.handoff_asked, HandoffReason.UNSURE: replies.handoff_unsure,
                HandoffReason.NO_ANSWER: replies.handoff_no_answer, HandoffReason.NONE_FIT: replies.handoff_none_fit,
                HandoffReason.NO_DETAIL: replies.handoff_no_detail,
                HandoffReason.RULED_OUT: replies.handoff_ruled_out}[self]
