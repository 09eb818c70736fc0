"""Typed, validated options of the dialogue engine (selector, clarification, session policy)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from dtdialog.understanding.intents import MAX_TURN_CHARS
from parsers.errors import ConfigError
from parsers.text_input import MAX_CHARS

#: Options that only the rule scorer reads; the learned ranker has no use for them (see ``check_ranker``).
RULE_SCORER_ONLY = ("agreement_weight", "first_step_agreement_weight", "require_agreement", "soft_first_step",
                    "topic_weight")


#: Retrieval depth per step at most: every candidate is analysed for agreement, so this bounds a turn's work.
MAX_CANDIDATES = 1000


@dataclass
class EngineConfig:
    """Options of ``AnswerSelector`` and ``DialogueManager``; invalid values raise ``ConfigError`` at once.

    candidates: retrieval depth per step (hits fetched before the agreement check).
    clarify_margin: when the top two agreeing candidates score within this margin, ask the user to choose.
    max_options: at most this many clarification options (plus "none of these").
    max_failures: after this many steps without an answer the bot is sure of (fallbacks, abstentions, none of the
        offered answers fitting) hand off to a human: the confidence has run out.
    max_rejections: after the customer turned down this many answers ("no, that didn't help") hand off to a human.
    agreement_weight: weight of the agreement score against the normalised retrieval score (0..1).
    require_agreement: drop candidates whose agreement verdict is negative (else only demote them).
    soft_first_step: on the first step (the question alone, no follow-up yet) only demote non-agreeing candidates
        even when ``require_agreement``: a long question's rule parse is the least reliable, so a hard drop loses the
        right answer (figures in ``docs/engine.md``).
    first_step_agreement_weight: ``agreement_weight`` on the first step when ``soft_first_step``: agreement breaks ties
        and near-ties of the whole-question retrieval there; follow-up steps, driven by the user's short reply and
        its relations (paper step 7), keep ``agreement_weight``.
    agreement_table: path of a JSON compatibility table replacing the built-in one.
    agreement_ratio: fraction of the part's non-default relations that must be addressed for a positive verdict.
    overlap_scope: "relation" (the paper's rule: the compatible answer relation's EDUs share an entity with the
        question relation's) or "answer" (also accept a compatible relation when the answer as a whole shares one).
    constraint_penalty: score factor removed from candidates that mention something the user cannot do/use;
        1.0 drops them.
    continuation_weight: bonus for the answer that followed the last delivered one in a logged dialogue.
    question_weight: weight of how much of the user's question the answer's logged opening question covers.
    step_weight: bonus for an answer that sat at the same step (A1, A2, ...) of its logged dialogue.
    topic_weight: weight of the answer's topical coverage of the question relative to the best candidate's
        (``topic_ratio``, see ``dtdialog.selection.selector``).
    clarify_ratio: a candidate competes in a clarification only when its score is at least this share of the
        best score and its ``topic_ratio`` is at least this high too (each option must be strong on its own).
    max_input_chars: longer user turns are refused with a prompt instead of being processed (default
        ``intents.MAX_TURN_CHARS``; at most the parser's ``MAX_CHARS``).
    max_traces: how many per-turn traces a session keeps.
    already_tried_penalty: score factor removed from an answer whose main recommendation (the first one in its
        nucleus EDUs) repeats an action the customer reported done or ruled out ("you already replaced the
        battery", ``dtdialog.understanding.tried``); applied after scoring under either ranker; 0 turns it off.
    condition_clash_penalty: score factor removed from an answer for a symptom that stops in the situation the
        customer says it happens in ("stops when you press the brakes" to "my brakes squeal when I stop";
        ``dtdialog.understanding.symptom_conditions``); after scoring, under either ranker; 0 turns it off.
    presupposition_penalty: score factor removed from an answer whose opening takes for granted a fact nobody in
        the conversation stated: a prior job ("After a starter job"), a reported observation ("that P0420 code") or
        a diagnosed symptom ("Rapid clicking with dim lights is the classic sign of ..."; ``dtdialog.understanding.presupposition``);
        after scoring, under either ranker; 0 turns it off.
    whole_question: the first step searches the keywords of the whole question (the part's first) and every
        part's RR terms, not only the first part's; agreement with the part still ranks the candidates.
    scope_quantile: the out-of-scope gate (``dtdialog.understanding.scope``) refuses a new question whose domain score is below
        this quantile of the index's own questions' leave-one-out scores (0 turns the domain check off; fitted
        by ``python -m eval.out_of_scope``).
    scope_threshold: a fixed domain-score threshold instead of the derived one (None: derive it from the index).
    scope_mass: a message whose known-stem evidence (IDF mass, ``dtdialog.understanding.scope``) reaches this is in the domain
        whatever its share (long real posts); None: the share alone decides.
    scope_dense_floor, scope_dense_sure: with a dense encoder (the learned ranker's), a message is in the domain
        when its largest cosine to a stored answer reaches ``scope_dense_sure``, or when the vocabulary says so
        and the cosine reaches ``scope_dense_floor`` (``dtdialog.understanding.scope``; fitted by ``python -m eval.out_of_scope``).
    step1_position: dialogue position on the first step (``dtdialog.stages.position_stage``): ``standalone``
        moves answers whose opening points back to earlier turns ("Then ...", "That confirms ...") behind every
        answer that can stand alone within ``opening_margin`` of the best score; ``opening`` does so for every
        answer that was a follow-up in its source dialogue; ``off`` keeps the scorer's order.
    opening_margin: how far below the best candidate's score (the learned ranker's probability, or the rule
        scorer's weighted sum, about 0..2) an answer that can open a dialogue may be and still go first; with
        none that close the scorer's order stands. 2 or more: any opening goes before every follow-up.

    Only the rule scorer (``dtdialog.selection.scoring.RuleScorer``) reads ``RULE_SCORER_ONLY``: ``agreement_weight``,
    ``first_step_agreement_weight``, ``require_agreement``, ``soft_first_step`` and ``topic_weight``. The learned
    ranker scores agreement as a model feature, so ``check_ranker("learned")`` refuses any of them set to a
    non-default value instead of ignoring it (``dtdialog.setup.assembly.build_engine`` calls it).
    """

    candidates: int = 100
    clarify_margin: float = 0.04
    max_options: int = 3
    max_failures: int = 2
    max_rejections: int = 3
    agreement_weight: float = 0.5
    first_step_agreement_weight: float = 0.1
    require_agreement: bool = True
    soft_first_step: bool = True
    agreement_table: str | None = None
    agreement_ratio: float = 1.0
    overlap_scope: str = "relation"
    constraint_penalty: float = 0.6
    continuation_weight: float = 0.2
    question_weight: float = 0.4
    step_weight: float = 0.1
    topic_weight: float = 0.3
    clarify_ratio: float = 0.8
    max_input_chars: int = MAX_TURN_CHARS
    max_traces: int = 50
    whole_question: bool = True
    # demotions after scoring, under either ranker
    already_tried_penalty: float = 0.5
    condition_clash_penalty: float = 0.8
    presupposition_penalty: float = 0.5
    # out-of-scope gate (``dtdialog.understanding.scope``)
    scope_quantile: float = 0.2
    scope_threshold: float | None = None
    scope_mass: float | None = 40.0
    scope_dense_floor: float = 0.16
    scope_dense_sure: float = 0.30
    # dialogue position on the first step
    step1_position: str = "opening"
    opening_margin: float = 0.2
    # --- calibrated confidence and abstention ---
    #: abstain_below: when the calibrated confidence (``dtdialog.selection.confidence``) of the answer the engine would give
    #: is below this, the bot asks for a missing detail (then hands off) instead of answering; 0 never abstains.
    #: The default is the threshold ``python -m eval.calibrate`` fits with the shipped calibrator: the one that
    #: answers 80% of the answerable first and later answers of the car-repair sets, read off cross-fitted confidences.
    abstain_below: float = 0.21

    def __post_init__(self) -> None:
        def check(ok: bool, message: str) -> None:
            if not ok:
                raise ConfigError(f"engine config: {message}")

        for name in ("candidates", "max_options", "max_failures", "max_rejections", "max_input_chars", "max_traces"):
            value = getattr(self, name)
            check(isinstance(value, int) and not isinstance(value, bool) and value >= 1,
                  f"{name} must be an integer >= 1, got {value!r}")
        check(self.max_input_chars <= MAX_CHARS, f"max_input_chars must be at most the parser's {MAX_CHARS}")
        check(self.candidates <= MAX_CANDIDATES, f"candidates must be at most {MAX_CANDIDATES} (a turn's work is "
              f"bounded), got {self.candidates}")
        for name in ("clarify_margin", "agreement_weight", "first_step_agreement_weight", "agreement_ratio", "constraint_penalty",
                     "continuation_weight", "question_weight", "step_weight", "topic_weight", "clarify_ratio",
                     "already_tried_penalty", "condition_clash_penalty", "presupposition_penalty"):
            value = getattr(self, name)
            check(isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= float(value) <= 1.0,
                  f"{name} must be a number in [0, 1], got {value!r}")
            setattr(self, name, float(value))
        check(isinstance(self.opening_margin, (int, float)) and not isinstance(self.opening_margin, bool)
              and self.opening_margin >= 0.0, f"opening_margin must be a number >= 0, got {self.opening_margin!r}")
        check(isinstance(self.scope_quantile, (int, float)) and not isinstance(self.scope_quantile, bool)
              and 0.0 <= self.scope_quantile <= 0.5, f"scope_quantile must be a number in [0, 0.5], got {self.scope_quantile!r}")
        check(self.scope_threshold is None or (isinstance(self.scope_threshold, (int, float))
              and not isinstance(self.scope_threshold, bool) and 0.0 <= self.scope_threshold <= 1.0),
              f"scope_threshold must be null or a number in [0, 1], got {self.scope_threshold!r}")
        check(all(isinstance(v, (int, float)) and not isinstance(v, bool) and -1.0 <= v <= 1.0
                  for v in (self.scope_dense_floor, self.scope_dense_sure)),
              "scope_dense_floor and scope_dense_sure must be cosines in [-1, 1]")
        check(self.scope_mass is None or (isinstance(self.scope_mass, (int, float))
              and not isinstance(self.scope_mass, bool) and self.scope_mass >= 0.0),
              f"scope_mass must be null or a number >= 0, got {self.scope_mass!r}")
        check(isinstance(self.abstain_below, (int, float)) and not isinstance(self.abstain_below, bool)
              and 0.0 <= float(self.abstain_below) <= 1.0,
              f"abstain_below must be a number in [0, 1], got {self.abstain_below!r}")
        self.abstain_below = float(self.abstain_below)
        check(isinstance(self.require_agreement, bool), "require_agreement must be true or false")
        check(isinstance(self.whole_question, bool), "whole_question must be true or false")
        check(isinstance(self.soft_first_step, bool), "soft_first_step must be true or false")
        check(self.overlap_scope in ("relation", "answer"), f"overlap_scope must be 'relation' or 'answer', "
              f"got {self.overlap_scope!r}")
        check(self.step1_position in ("off", "standalone", "opening"),
              f"step1_position must be 'off', 'standalone' or 'opening', got {self.step1_position!r}")
        check(self.agreement_table is None or isinstance(self.agreement_table, str),
              "agreement_table must be a path or null")

    def check_ranker(self, ranker: str) -> None:
        """Raise ``ConfigError`` when an option set here has no effect under ``ranker`` (``learned`` or ``rules``)."""
        if ranker != "learned":
            return
        defaults = type(self)()
        for name in RULE_SCORER_ONLY:
            if getattr(self, name) != getattr(defaults, name):
                raise ConfigError(f"engine config: {name} has no effect under the learned ranker; "
                                  "remove it or use --ranker rules")

    def to_dict(self) -> dict[str, Any]:
        """Return the options as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EngineConfig:
        """Return the config in ``data``; unknown keys raise ``ConfigError``."""
        if not isinstance(data, dict):
            raise ConfigError("engine config: expected an object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"engine config: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**data)
