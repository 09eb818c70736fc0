"""Every sentence the dialogue manager and ``dtdialog chat`` say to the user, in one place.

``Replies`` holds the wording as plain templates so a deployment for another domain can pass its
own instance (``DialogueManager(replies=...)``) without touching the state machine; ``DEFAULT_REPLIES``
is the generic wording, with no domain words: a domain's wording comes from its profile (``dtdialog.setup.profile``,
``Profile.replies()``). Templates use ``str.format`` fields named after what they receive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class _Option(Protocol):
    number: int
    label: str


@dataclass(frozen=True)
class Replies:
    """The manager's wording; each field is a sentence or a ``str.format`` template."""

    #: nothing to search with while no question is open
    greeting: str = "Hi! Describe your question - what happens, and what you have already tried."
    #: a reply with no content while an answer is on screen
    feedback_prompt: str = ("Tell me what happened when you tried that, or say 'didn't help' for another "
                            "suggestion, or 'thanks' if it is fixed.")
    #: a reply with no content after a fallback asked for detail
    detail_prompt: str = ("Could you add a detail in a few words - the exact symptom, when it happens, or what you "
                          "already tried? Or say 'human' to talk to a person.")
    #: an empty or unusable turn while an answer is on screen
    did_it_help: str = ("Did that help? Say 'thanks' if it is fixed, 'no' for another suggestion, or tell me what "
                        "happened.")
    reset: str = "Sure. What is the new question?"
    #: "thanks, that fixed it" after an answer
    concluded: str = "Glad that sorted it out! If anything else comes up, just describe it here."
    #: "thanks" after an answer, without saying it is fixed ("ok I'll get it checked, thanks")
    concluded_thanks: str = "You're welcome. If it comes back or anything else comes up, just describe it here."
    #: said before the reply to a message that tells a new problem while another question is open
    new_problem: str = "That sounds like a new problem, so let's look at it. "
    #: "thanks" while options are on offer
    concluded_in_choice: str = "Glad to help! Come back any time."
    too_long: str = "That message is too long (over {limit} characters). Please describe the problem in a few sentences."
    unreadable: str = "Sorry, I could not read that: {error}. Please describe the problem in a sentence or two."
    #: ``{messages}`` is the transcript's length; worded so that 1 reads as well as 12
    handoff: str = ("I'm passing you to a human agent ({reason}). They will see our whole conversation "
                    "(messages so far: {messages}), so you won't have to repeat anything.")
    #: any message after the hand-off: it joins the transcript the person will read
    handed_off_wait: str = ("A person will pick this up: I've added your message to the conversation they will see. "
                            "To start over with me instead, say 'new question'.")
    #: a reply with no content after a question was answered or closed (the greeting is for the first turn only)
    anything_else: str = "Is there anything else I can help with? Describe what happens and what you have already tried."
    handoff_asked: str = "you asked for a person"
    handoff_failures: str = "{failures} answers did not help"
    handoff_failures_one: str = "the answer did not help"
    handoff_no_answer: str = "no stored answer addresses the question"
    #: answers on the topic were found but none passed agreement for the missing part
    fallback_off_part: str = ("I found answers on this topic, but none that deals with {missing}. "
                              "Could you add a detail - the exact symptom, when it happens, or what you already tried?")
    fallback_not_found: str = ("I could not find an answer about {missing}. "
                               "Could you describe it differently or add a detail (symptom, model, what you tried)?")
    #: said before the options are listed again after a constraint removed some
    constraint_noted: str = 'Noted: "{said}". '
    #: ... when none of the options on offer needs what the customer ruled out: say so, so the same list is no echo
    constraint_spares_all: str = 'Noted: "{said}". None of these needs that. '
    #: ... when it leaves one option: asked, not delivered, since the customer did not pick it
    choose_one_left: str = "Of the answers I offered, only this one is left. Does it fit your situation?"
    choose: str = "A few different answers match your description. Which one fits your situation best?"
    #: a detail given instead of a pick still leaves the options on screen: they are not news
    choose_same: str = ("Thanks - that still leaves the same answers, so it doesn't tell them apart. "
                        "Which one is closest to your situation?")
    choose_again: str = ("Sorry, I could not match that to an option. "
                         "Reply with a number, a few words from an option, or 'none of these':")
    option_line: str = "  {number}) {label}"
    # --- clarification people can use ---
    #: none of the offered answers fits and no other strong one is on topic: ask for the one missing detail
    none_fit_detail: str = ("Then I am missing a detail to find the right answer. In a few words: what exactly happens "
                            "(the symptom), and which product, part or service is involved? Or say 'human' to talk to a person.")
    #: ... the same, when the customer already said what happens and to which part: {question} asks what is missing
    none_fit_ask: str = ("Then I am missing a detail to find the right answer. {question} Or say 'human' to talk to a "
                         "person.")
    #: ... the same, for a customer who already told a lot: no question that would make them repeat it
    none_fit_told: str = ("Then none of my answers fits what you described. Say 'human' and I'll pass our conversation "
                          "to a person, or tell me anything you haven't mentioned and I'll look again.")
    #: said before other strong candidates are offered after "none of these"
    none_fit_others: str = "OK, not those. "
    #: asked over the closest answers when the bot is still unsure after asking for a detail
    unsure_options: str = ("I'm still not sure which answer fits. These are the closest ones I have - does one of "
                           "them match your situation?")
    handoff_none_fit: str = "none of the suggested answers fit"
    handoff_no_detail: str = "the detail you added did not lead to a fitting answer"
    #: the answer on screen needs something the customer said they cannot do or do not have, and no other is sure
    handoff_ruled_out: str = "the next check needs something you said you can't do or don't have"
    # --- a question about the repair itself, asked mid-dialogue ("is it safe to drive?") ---
    #: the sentence of an answer already given that tells it
    side_told: str = 'On that, my answer above says: "{sentence}"'
    #: no answer given tells it, by what was asked (``side_questions``: safety, cost, warranty, duration, place,
    #: difficulty)
    side_untold_safety: str = "My answers don't say whether it is safe; a person can advise you - say 'human'."
    side_untold_cost: str = "My answers don't include prices; say 'human' to ask a person."
    side_untold_warranty: str = "My answers don't say whether it is covered by a warranty; say 'human' to ask a person."
    side_untold_duration: str = "My answers don't say how long it takes; say 'human' to ask a person."
    side_untold_place: str = "My answers don't say where that is; say 'human' to ask a person."
    side_untold_difficulty: str = "My answers don't say how hard the job is; say 'human' to ask a person."

    def side_untold_text(self, kind: str) -> str:
        return getattr(self, f"side_untold_{kind}", self.side_untold_safety)
    # --- out-of-scope gate: what the bot says instead of answering from the index ---
    #: small talk with no question: say what the bot is for and invite the question
    out_of_scope_greeting: str = ("Hi! I'm the support assistant: I answer questions from our support answers. "
                                  "What is your question - what happens, and what have you already tried?")
    #: keyboard mash, random characters
    out_of_scope_gibberish: str = ("Sorry, I could not make sense of that. Could you rephrase it as a question - what "
                                   "happens, and when?")
    #: not English; ``{language}`` is the detected language code (may be empty)
    out_of_scope_language: str = ("Sorry, I can only understand English. Please describe your question in English "
                                  "(or say 'human' to talk to a person).")
    #: English, but not about what the index covers
    out_of_scope_domain: str = ("Sorry, that seems to be outside what I can help with: it is not a question our "
                                "support answers cover. If it is, could you describe it in a few words? "
                                "Or say 'human' to talk to a person.")
    #: an opening in the domain that says too little to search with ("my car", "it makes a noise")
    vague_opening: str = ("Could you tell me a bit more: what exactly happens, when does it happen, and what have you "
                          "already checked?")

    def out_of_scope_text(self, reason: str, *, language: str | None = None) -> str:
        """Return the reply to an out-of-scope message for ``reason`` (greeting, gibberish, language, vague, domain)."""
        if reason == "vague":  # not refused: the opening needs detail before it can be searched
            return self.vague_opening
        template = getattr(self, f"out_of_scope_{reason}", self.out_of_scope_domain)
        return template.format(language=language or "")
    # --- abstention instead of a wrong answer (calibrated confidence) ---
    #: said when the engine is not confident enough to answer; {question} is the detail question below
    abstain: str = ("I'm not sure I have the right answer for this yet. {question} "
                    "Or say 'human' and I'll pass our conversation to a person.")
    #: the detail question when the question names no part or system the stored answers know
    abstain_part: str = "Which product, part or service is it about?"
    #: ... when it names a thing none of the stored answers talk about
    abstain_named: str = "My answers may use another name for it: could you describe the problem in other words?"
    #: ... when it asks how to do something, or whether it is advisable, and reports no problem
    abstain_goal: str = "Could you tell me a bit more: what are you planning to do, or where did you get stuck?"
    #: ... when it names a part but not what happens
    abstain_symptom: str = "What exactly happens - an error message, something that does not work, something missing?"
    #: ... when both are there
    abstain_context: str = "When does it happen, and what have you already tried?"
    #: ... when both are there and the customer already said what they tried: never ask it again
    abstain_when: str = "When does it happen, and did anything change after what you already tried?"
    #: ... when both are there and the customer already said when it happens
    abstain_tried: str = "What have you already tried, and what happened?"
    #: ... when a leading answer needs a kind of evidence the customer never reported: a noise, an error code, a light
    #: or message, a smell or smoke, a vibration
    abstain_noise: str = "Do you hear anything when it happens - a click, a squeal, a knock?"
    abstain_code: str = "Do you see an error code? If so, which one?"
    abstain_light: str = "Does a warning light or message come on, or do the lights change when it happens?"
    abstain_smell: str = "Do you notice any smell or smoke when it happens?"
    abstain_vibration: str = "Do you feel any shake or vibration when it happens?"
    #: ... when the customer named a kind of evidence but not what it is like ("my car makes a weird noise")
    abstain_describe_noise: str = "What does it sound like - a click, a squeal, a grind, a knock, a whine?"
    abstain_describe_light: str = "Which light or message is it, and does it stay on or flash?"
    #: ... a light they named by which one it is ("the check engine light is on"): only how it behaves
    abstain_describe_named_light: str = "Does it stay on, or does it flash?"
    abstain_describe_smell: str = "What does it smell like - burning, sweet, fuel?"
    abstain_describe_vibration: str = "Where do you feel it - the steering wheel, the seat, a pedal?"
    #: ... added to a describe question when the customer has not said when it happens
    abstain_describe_when: str = "And when does it happen?"
    #: a vague opening that named a kind of evidence ("my car shakes"): {question} is its describe question
    vague_describe: str = "Could you tell me a bit more? {question}"
    #: ... when the customer already said both when it happens and what they tried
    abstain_more: str = "What else do you notice when it happens, and did anything change since it started?"
    #: the bot's own yes/no question again, when the reply left it open and the next step depends on it
    abstain_again: str = "Before I go on, could you check this: {question}"
    #: the whole abstention for a customer who already told a lot: no question that would make them repeat it
    abstain_told: str = ("I'm not sure I have the right answer for this yet, and I won't make you repeat what you've "
                         "told me. Say 'human' and I'll pass our conversation to a person, or tell me anything you "
                         "haven't mentioned and I'll look again.")
    #: the hand-off reason after an abstention did not lead to a confident answer
    handoff_unsure: str = "I could not find an answer I'm confident about"
    # --- the chat command's own lines (``dtdialog chat``) ---
    #: a turn the engine refused with an error of its own; ``{error}`` is its one-line message
    turn_failed: str = "Sorry, something went wrong with that message ({error}). Your session is saved; please try again."
    #: a turn that failed unexpectedly; ``{error}`` is the kind of error, never its details
    internal_error: str = ("Sorry, an internal error occurred ({error}). Your session is saved; "
                           "please rephrase or try again.")
    #: an empty line typed in the interactive chat
    empty_line: str = "(type your message, or 'quit' to leave)"
    #: shown when a saved session is resumed; ``{text}`` is the bot's last message
    last_time: str = "(last time) {text}"

    def too_long_text(self, limit: int) -> str:
        return self.too_long.format(limit=limit)

    def unreadable_text(self, error: object) -> str:
        return self.unreadable.format(error=error)

    def handoff_text(self, reason: str, messages: int) -> str:
        return self.handoff.format(reason=reason, messages=messages)

    def handoff_failures_reason(self, failures: int) -> str:
        return self.handoff_failures_one if failures == 1 else self.handoff_failures.format(failures=failures)

    def fallback_text(self, missing: str, *, found_on_topic: bool) -> str:
        """Return the fallback reply; ``found_on_topic`` when answers were found but none for the part asked."""
        return (self.fallback_off_part if found_on_topic else self.fallback_not_found).format(missing=missing)

    def constraint_noted_text(self, said: str, *, spares_all: bool = False) -> str:
        return (self.constraint_spares_all if spares_all else self.constraint_noted).format(said=said)

    def options_text(self, options: Sequence[_Option], *, again: bool = False, question: str | None = None) -> str:
        """Return the question that lists ``options`` (``again`` for a reply that matched none; ``question`` asks
        instead of ``choose``)."""
        head = self.choose_again if again else (question or self.choose)
        return "\n".join([head] + [self.option_line.format(number=o.number, label=o.label) for o in options])

    def describe_question(self, detail: str) -> str:
        """Return the question of ``describe_<kind>`` (what the named noise, light, smell or vibration is like), with
        the when question after it for ``describe_<kind>+when``."""
        kind, _, when = detail.removeprefix("describe_").partition("+")
        question = getattr(self, f"abstain_describe_{kind}", self.abstain_symptom)
        return f"{question} {self.abstain_describe_when}" if when else question

    def abstain_text(self, detail: str, *, again: str = "") -> str:
        """Return the abstention for the missing ``detail`` (``part``, ``named``, ``goal``, ``symptom``, ``when``,
        ``tried``, ``more``, ``context``, or a kind of evidence: ``noise``, ``code``, ``light``, ``smell``,
        ``vibration``; ``describe_<kind>`` what the kind of evidence they named is like; ``told`` asks nothing;
        ``again`` asks the bot's own question ``again`` once more)."""
        if detail == "told":
            return self.abstain_told
        return self.abstain.format(question=self.detail_question(detail, again=again))

    def detail_question(self, detail: str, *, again: str = "") -> str:
        """Return the question that asks for the missing ``detail`` (as ``abstain_text``; not for ``told``)."""
        if detail == "again" and again:
            return self.abstain_again.format(question=again)
        if detail.startswith("describe_"):
            return self.describe_question(detail)
        return {"part": self.abstain_part, "named": self.abstain_named, "goal": self.abstain_goal,
                "symptom": self.abstain_symptom, "when": self.abstain_when,
                "tried": self.abstain_tried, "more": self.abstain_more, "noise": self.abstain_noise,
                "code": self.abstain_code, "light": self.abstain_light, "smell": self.abstain_smell,
                "vibration": self.abstain_vibration}.get(detail, self.abstain_context)

    def none_fit_text(self, detail: str) -> str:
        """Return the reply to "none of these" when nothing else fits: what happens and which part
        (``none_fit_detail``) when one of them is missing, else the one missing ``detail``, or, for a customer who
        told a lot, no question (``none_fit_told``)."""
        if detail in ("symptom", "part"):
            return self.none_fit_detail
        if detail == "told":
            return self.none_fit_told
        return self.none_fit_ask.format(question=self.detail_question(detail))


DEFAULT_REPLIES = Replies()
