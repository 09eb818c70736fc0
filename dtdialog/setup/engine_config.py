"""Typed, validated options of the dialogue engine: one small dataclass per stage or policy, held by ``EngineConfig``.

Each group checks its own fields when it is made; a bad value raises a one-line ``ConfigError``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from dtdialog.understanding.intents import MAX_TURN_CHARS
from parsers.errors import ConfigError
from parsers.text_input import MAX_CHARS

#: Retrieval depth per step at most: every candidate is analysed for agreement, so this bounds a turn's work.
MAX_CANDIDATES = 1000


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(f"engine config: {message}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_counts(group: Any, *names: str) -> None:
    for name in names:
        value = getattr(group, name)
        _check(isinstance(value, int) and not isinstance(value, bool) and value >= 1,
               f"{name} must be an integer >= 1, got {value!r}")


def _check_unit_floats(group: Any, *names: str) -> None:
    """Check that each option is a number in [0, 1] and store it as a float."""
    for name in names:
        value = getattr(group, name)
        _check(_is_number(value) and 0.0 <= float(value) <= 1.0, f"{name} must be a number in [0, 1], got {value!r}")
        setattr(group, name, float(value))


def _check_flags(group: Any, *names: str) -> None:
    for name in names:
        _check(isinstance(getattr(group, name), bool), f"{name} must be true or false")


@dataclass
class RetrievalConfig:
    """candidates: retrieval depth per step (hits fetched before the agreement check).
    whole_question: the first step searches the keywords of the whole question (the part's first) and every
        part's RR terms, not only the first part's; agreement with the part still ranks the candidates.
    """

    candidates: int = 100
    whole_question: bool = True

    def __post_init__(self) -> None:
        _check_counts(self, "candidates")
        _check(self.candidates <= MAX_CANDIDATES, f"candidates must be at most {MAX_CANDIDATES} (a turn's work is "
               f"bounded), got {self.candidates}")
        _check_flags(self, "whole_question")


@dataclass
class AgreementConfig:
    """How the rhetorical agreement verdict is reached (both rankers read it).

    agreement_table: path of a JSON compatibility table replacing the built-in one.
    agreement_ratio: fraction of the part's non-default relations that must be addressed for a positive verdict.
    overlap_scope: "relation" (the paper's rule: the compatible answer relation's EDUs share an entity with the
        question relation's) or "answer" (also accept a compatible relation when the answer as a whole shares one).
    """

    agreement_table: str | None = None
    agreement_ratio: float = 1.0
    overlap_scope: str = "relation"

    def __post_init__(self) -> None:
        _check_unit_floats(self, "agreement_ratio")
        _check(self.overlap_scope in ("relation", "answer"), f"overlap_scope must be 'relation' or 'answer', "
               f"got {self.overlap_scope!r}")
        _check(self.agreement_table is None or isinstance(self.agreement_table, str),
               "agreement_table must be a path or null")


@dataclass
class RuleScoringConfig:
    """Options only the rule scorer (``dtdialog.selection.scoring.RuleScorer``) reads; the learned ranker scores
    agreement as a model feature, so ``EngineConfig.check_ranker("learned")`` refuses any of them changed.

    agreement_weight: weight of the agreement score against the normalised retrieval score (0..1).
    first_step_agreement_weight: ``agreement_weight`` on the first step when ``soft_first_step``: agreement breaks
        ties and near-ties of the whole-question retrieval there; follow-up steps, driven by the user's short reply
        and its relations (paper step 7), keep ``agreement_weight``.
    require_agreement: drop candidates whose agreement verdict is negative (else only demote them).
    soft_first_step: on the first step (the question alone, no follow-up yet) only demote non-agreeing candidates
        even when ``require_agreement``: a long question's rule parse is the least reliable, so a hard drop loses the
        right answer (figures in ``docs/engine.md``).
    topic_weight: weight of the answer's topical coverage of the question relative to the best candidate's
        (``topic_ratio``, see ``dtdialog.selection.selector``).
    """

    agreement_weight: float = 0.5
    first_step_agreement_weight: float = 0.1
    require_agreement: bool = True
    soft_first_step: bool = True
    topic_weight: float = 0.3

    def __post_init__(self) -> None:
        _check_unit_floats(self, "agreement_weight", "first_step_agreement_weight", "topic_weight")
        _check_flags(self, "require_agreement", "soft_first_step")


@dataclass
class ScoringConfig:
    """Bonuses and the constraint penalty that both rankers add to a candidate's score.

    continuation_weight: bonus for the answer that followed the last delivered one in a logged dialogue.
    question_weight: weight of how much of the user's question the answer's logged opening question covers.
    step_weight: bonus for an answer that sat at the same step (A1, A2, ...) of its logged dialogue.
    constraint_penalty: score factor removed from candidates that mention something the user cannot do/use;
        1.0 drops them.
    """

    continuation_weight: float = 0.2
    question_weight: float = 0.4
    step_weight: float = 0.1
    constraint_penalty: float = 0.6

    def __post_init__(self) -> None:
        _check_unit_floats(self, "continuation_weight", "question_weight", "step_weight", "constraint_penalty")


@dataclass
class DemotionConfig:
    """Score factors removed after scoring, under either ranker; 0 turns one off.

    already_tried_penalty: from an answer whose main recommendation (the first one in its nucleus EDUs) repeats an
        action the customer reported done or ruled out ("you already replaced the battery",
        ``dtdialog.understanding.tried``).
    condition_clash_penalty: from an answer for a symptom that stops in the situation the customer says it happens
        in ("stops when you press the brakes" to "my brakes squeal when I stop";
        ``dtdialog.understanding.symptom_conditions``).
    presupposition_penalty: from an answer whose opening takes for granted a fact nobody in the conversation
        stated: a prior job ("After a starter job"), a reported observation ("that P0420 code") or a diagnosed
        symptom ("Rapid clicking with dim lights is the classic sign of ...";
        ``dtdialog.understanding.presupposition``).
    branch_clash_penalty: from the logged continuation of the answer just given when the customer's reply went
        another way than the reply it was written for: the bot's yes/no question answered the other way, or a
        question back where the logged customer reported something (``dtdialog.understanding.reply_branch``).
    """

    already_tried_penalty: float = 0.5
    condition_clash_penalty: float = 0.8
    presupposition_penalty: float = 1.0
    branch_clash_penalty: float = 0.8

    def __post_init__(self) -> None:
        _check_unit_floats(self, "already_tried_penalty", "condition_clash_penalty", "presupposition_penalty",
                           "branch_clash_penalty")


@dataclass
class PositionConfig:
    """Dialogue position on the first step (``dtdialog.selection.stages.position_stage``).

    step1_position: ``standalone`` moves answers whose opening points back to earlier turns ("Then ...", "That
        confirms ...") behind every answer that can stand alone within ``opening_margin`` of the best score;
        ``opening`` does so for every answer that was a follow-up in its source dialogue; ``off`` keeps the
        scorer's order.
    opening_margin: how far below the best candidate's score (the learned ranker's probability, or the rule
        scorer's weighted sum, about 0..2) an answer that can open a dialogue may be and still go first; with
        none that close the scorer's order stands. 2 or more: any opening goes before every follow-up.
    """

    step1_position: str = "opening"
    opening_margin: float = 0.2

    def __post_init__(self) -> None:
        _check(_is_number(self.opening_margin) and self.opening_margin >= 0.0,
               f"opening_margin must be a number >= 0, got {self.opening_margin!r}")
        _check(self.step1_position in ("off", "standalone", "opening"),
               f"step1_position must be 'off', 'standalone' or 'opening', got {self.step1_position!r}")


@dataclass
class ClarifyConfig:
    """When the bot asks the user to choose between answers.

    clarify_margin: when the top two agreeing candidates score within this margin, ask the user to choose.
    clarify_ratio: a candidate competes in a clarification only when its score is at least this share of the
        best score and its ``topic_ratio`` is at least this high too (each option must be strong on its own).
    max_options: at most this many clarification options (plus "none of these").
    confident_options: close alternatives are offered only when the chance that one of them is right (their
        calibrated confidences, each as if it were the answer, summed) reaches ``abstention.abstain_below``, the
        chance the bot needs to answer at all; else the step is unsure (a detail question, then the closest answers,
        then the hand-off). False offers any close alternatives.
    """

    clarify_margin: float = 0.04
    clarify_ratio: float = 0.8
    max_options: int = 3
    confident_options: bool = True

    def __post_init__(self) -> None:
        _check_counts(self, "max_options")
        _check_unit_floats(self, "clarify_margin", "clarify_ratio")
        _check_flags(self, "confident_options")


@dataclass
class AbstentionConfig:
    """abstain_below: when the calibrated confidence (``dtdialog.selection.confidence``) of the answer the engine
    would give is below this, the bot asks for a missing detail (then hands off) instead of answering; 0 never
    abstains. The default is the threshold ``python -m eval.calibrate`` fits with the shipped calibrator.
    told_words: when unsure, a step whose messages hold at least this many words gets no context question (when it
    happens, what was tried, what else): the customer told a lot (``dtdialog.dialogue.abstain.TOLD``); 0 always asks.
    brief_words, brief_below: an opening of fewer than ``brief_words`` words ("Brakes go to the floor.") is answered
    only at ``brief_below`` confidence or more, else the bot first asks for the detail: with so little said, one
    question costs the customer less than an answer more likely wrong than right. Once, before anything else was
    asked or shown, and not when the opening already says when it happens and what was tried; 0 words turns it off.
    logged_opening_at: a first message that says what a logged opening question said, in other words, lends that
    dialogue's first answer the probability of being right that the match gives (``dtdialog.ranking.logged_questions``),
    when higher than its calibrated confidence and at least this; 1 turns it off (the calibrator alone decides).
    """

    abstain_below: float = 0.21
    told_words: int = 60
    brief_words: int = 12
    brief_below: float = 0.5
    logged_opening_at: float = 0.5

    def __post_init__(self) -> None:
        _check_unit_floats(self, "abstain_below", "brief_below", "logged_opening_at")
        for name in ("told_words", "brief_words"):
            value = getattr(self, name)
            _check(isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                   f"{name} must be an integer >= 0, got {value!r}")


@dataclass
class ScopeConfig:
    """The out-of-scope gate (``dtdialog.understanding.scope``; fitted by ``python -m eval.out_of_scope``).

    scope_quantile: a new question whose domain score is below this quantile of the index's own questions'
        leave-one-out scores is refused (0 turns the domain check off).
    scope_threshold: a fixed domain-score threshold instead of the derived one (None: derive it from the index).
    scope_mass: a message whose known-stem evidence (IDF mass) reaches this is in the domain whatever its share
        (long real posts); None: the share alone decides.
    scope_dense_floor, scope_dense_sure: with a dense encoder (the learned ranker's), a message is in the domain
        when its largest cosine to a stored answer reaches ``scope_dense_sure``, or when the vocabulary says so
        and the cosine reaches ``scope_dense_floor``.
    """

    scope_quantile: float = 0.2
    scope_threshold: float | None = None
    scope_mass: float | None = 40.0
    scope_dense_floor: float = 0.26
    scope_dense_sure: float = 0.32

    def __post_init__(self) -> None:
        _check(_is_number(self.scope_quantile) and 0.0 <= self.scope_quantile <= 0.5,
               f"scope_quantile must be a number in [0, 0.5], got {self.scope_quantile!r}")
        threshold = self.scope_threshold
        _check(threshold is None or (_is_number(threshold) and 0.0 <= threshold <= 1.0),
               f"scope_threshold must be null or a number in [0, 1], got {self.scope_threshold!r}")
        _check(all(_is_number(v) and -1.0 <= v <= 1.0 for v in (self.scope_dense_floor, self.scope_dense_sure)),
               "scope_dense_floor and scope_dense_sure must be cosines in [-1, 1]")
        _check(self.scope_mass is None or (_is_number(self.scope_mass) and self.scope_mass >= 0.0),
               f"scope_mass must be null or a number >= 0, got {self.scope_mass!r}")


@dataclass
class DialogueLimits:
    """Session policy limits of ``DialogueManager``.

    max_failures: after this many steps without an answer the bot is sure of (fallbacks, abstentions, none of the
        offered answers fitting) hand off to a human: the confidence has run out.
    max_rejections: after the customer turned down this many answers ("no, that didn't help") hand off to a human.
    options_when_unsure: when the confidence runs out (the last unsure step before ``max_failures``), first offer the
        closest answers (up to ``clarify.max_options``) to pick from, and hand off only when none fits; False hands
        off at once.
    max_input_chars: longer user turns are refused with a prompt instead of being processed (default
        ``intents.MAX_TURN_CHARS``; at most the parser's ``MAX_CHARS``).
    max_traces: how many per-turn traces a session keeps.
    """

    max_failures: int = 2
    max_rejections: int = 3
    options_when_unsure: bool = True
    max_input_chars: int = MAX_TURN_CHARS
    max_traces: int = 50

    def __post_init__(self) -> None:
        _check_counts(self, "max_failures", "max_rejections", "max_input_chars", "max_traces")
        _check_flags(self, "options_when_unsure")
        _check(self.max_input_chars <= MAX_CHARS, f"max_input_chars must be at most the parser's {MAX_CHARS}")


@dataclass
class EngineConfig:
    """Options of ``AnswerSelector`` and ``DialogueManager``, one group per stage or policy (see each class)."""

    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    agreement: AgreementConfig = field(default_factory=AgreementConfig)
    rules: RuleScoringConfig = field(default_factory=RuleScoringConfig)
    scoring: ScoringConfig = field(default_factory=ScoringConfig)
    demotions: DemotionConfig = field(default_factory=DemotionConfig)
    position: PositionConfig = field(default_factory=PositionConfig)
    clarify: ClarifyConfig = field(default_factory=ClarifyConfig)
    abstention: AbstentionConfig = field(default_factory=AbstentionConfig)
    scope: ScopeConfig = field(default_factory=ScopeConfig)
    dialogue: DialogueLimits = field(default_factory=DialogueLimits)

    def __post_init__(self) -> None:
        for group in fields(self):
            value = getattr(self, group.name)
            _check(isinstance(value, GROUPS[group.name]), f"{group.name} must be an object of its options")

    def check_ranker(self, ranker: str) -> None:
        """Raise ``ConfigError`` when an option set here has no effect under ``ranker`` (``learned`` or ``rules``)."""
        if ranker != "learned":
            return
        defaults = RuleScoringConfig()
        for name in RULE_SCORER_ONLY:
            if getattr(self.rules, name) != getattr(defaults, name):
                raise ConfigError(f"engine config: {name} has no effect under the learned ranker; "
                                  "remove it or use --ranker rules")

    def to_dict(self) -> dict[str, Any]:
        """Return the options as a JSON-ready dict, one object per group."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EngineConfig:
        """Return the config in ``data``: groups of options, or the flat options of specs saved before the groups
        (each key goes to its group); unknown or repeated keys raise ``ConfigError``."""
        if not isinstance(data, dict):
            raise ConfigError("engine config: expected an object")
        groups: dict[str, dict[str, Any]] = {name: {} for name in GROUPS}
        unknown: list[str] = []
        for key, value in data.items():
            if key in GROUPS:
                _check(isinstance(value, dict), f"{key} must be an object of options")
                known = {f.name for f in fields(GROUPS[key])}
                unknown += [f"{key}.{name}" for name in value if name not in known]
                pairs = [(key, name, v) for name, v in value.items() if name in known]
            elif key in FLAT_OPTIONS:
                pairs = [(FLAT_OPTIONS[key], key, value)]
            else:
                unknown.append(key)
                continue
            for group, name, v in pairs:
                _check(name not in groups[group], f"{name} is given twice (flat and in {group})")
                groups[group][name] = v
        if unknown:
            raise ConfigError(f"engine config: unknown option(s) {', '.join(sorted(unknown))}; known: "
                              f"{', '.join(sorted(FLAT_OPTIONS))} (or grouped as {', '.join(GROUPS)})")
        return cls(**{name: GROUPS[name](**options) for name, options in groups.items()})


#: The option groups of ``EngineConfig`` by attribute name.
GROUPS: dict[str, type] = {"retrieval": RetrievalConfig, "agreement": AgreementConfig, "rules": RuleScoringConfig,
                           "scoring": ScoringConfig, "demotions": DemotionConfig, "position": PositionConfig,
                           "clarify": ClarifyConfig, "abstention": AbstentionConfig, "scope": ScopeConfig,
                           "dialogue": DialogueLimits}

#: Each option's group: the flat keys of specs saved before the groups map through it.
FLAT_OPTIONS: dict[str, str] = {f.name: group for group, kind in GROUPS.items() for f in fields(kind)}

#: Options that only the rule scorer reads; the learned ranker has no use for them (see ``check_ranker``).
RULE_SCORER_ONLY = tuple(f.name for f in fields(RuleScoringConfig))
