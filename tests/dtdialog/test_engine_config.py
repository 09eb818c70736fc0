"""``EngineConfig``: option groups that validate themselves, and saved specs of either form load alike."""

from __future__ import annotations

import json

import pytest

from dtdialog.setup.assembly import EngineSpec
from dtdialog.setup.engine_config import (
    FLAT_OPTIONS,
    GROUPS,
    AbstentionConfig,
    AgreementConfig,
    ClarifyConfig,
    DemotionConfig,
    DialogueLimits,
    EngineConfig,
    PositionConfig,
    RetrievalConfig,
    RuleScoringConfig,
    ScopeConfig,
    ScoringConfig,
)
from parsers.errors import ConfigError

#: Non-default values of every option, in the flat form specs were saved in before the groups.
FLAT = {"candidates": 40, "whole_question": False, "agreement_table": "table.json", "agreement_ratio": 0.5,
        "overlap_scope": "answer", "agreement_weight": 0.3, "first_step_agreement_weight": 0.2,
        "require_agreement": False, "soft_first_step": False, "topic_weight": 0.1, "continuation_weight": 0.3,
        "question_weight": 0.5, "step_weight": 0.2, "constraint_penalty": 1.0, "already_tried_penalty": 0.25,
        "condition_clash_penalty": 0.5, "presupposition_penalty": 0.0, "branch_clash_penalty": 0.5,
        "step1_position": "standalone",
        "opening_margin": 2.5, "clarify_margin": 0.1, "clarify_ratio": 0.7, "max_options": 4, "confident_options": False,
        "abstain_below": 0.3, "told_words": 40, "brief_words": 8, "brief_below": 0.6, "logged_opening_at": 0.7,
        "scope_quantile": 0.1, "scope_threshold": 0.05, "scope_mass": None, "scope_dense_floor": 0.1,
        "scope_dense_sure": 0.4, "max_failures": 3, "max_rejections": 2, "options_when_unsure": False,
        "max_input_chars": 500, "max_traces": 10}


@pytest.mark.parametrize(("group", "options", "message"), [
    (RetrievalConfig, {"candidates": 0}, "candidates must be an integer >= 1, got 0"),
    (RetrievalConfig, {"candidates": 1001}, "candidates must be at most 1000 (a turn's work is bounded), got 1001"),
    (RetrievalConfig, {"whole_question": 1}, "whole_question must be true or false"),
    (AgreementConfig, {"overlap_scope": "edu"}, "overlap_scope must be 'relation' or 'answer', got 'edu'"),
    (AgreementConfig, {"agreement_table": 3}, "agreement_table must be a path or null"),
    (RuleScoringConfig, {"agreement_weight": -0.1}, "agreement_weight must be a number in [0, 1], got -0.1"),
    (RuleScoringConfig, {"soft_first_step": "yes"}, "soft_first_step must be true or false"),
    (ScoringConfig, {"step_weight": True}, "step_weight must be a number in [0, 1], got True"),
    (DemotionConfig, {"condition_clash_penalty": 2}, "condition_clash_penalty must be a number in [0, 1], got 2"),
    (PositionConfig, {"step1_position": "first"}, "step1_position must be 'off', 'standalone' or 'opening', got 'first'"),
    (PositionConfig, {"opening_margin": -1}, "opening_margin must be a number >= 0, got -1"),
    (ClarifyConfig, {"max_options": "3"}, "max_options must be an integer >= 1, got '3'"),
    (AbstentionConfig, {"abstain_below": 1.5}, "abstain_below must be a number in [0, 1], got 1.5"),
    (AbstentionConfig, {"told_words": -1}, "told_words must be an integer >= 0, got -1"),
    (AbstentionConfig, {"brief_words": 2.5}, "brief_words must be an integer >= 0, got 2.5"),
    (AbstentionConfig, {"brief_below": -0.1}, "brief_below must be a number in [0, 1], got -0.1"),
    (AbstentionConfig, {"logged_opening_at": 1.5}, "logged_opening_at must be a number in [0, 1], got 1.5"),
    (ScopeConfig, {"scope_quantile": 0.9}, "scope_quantile must be a number in [0, 0.5], got 0.9"),
    (ScopeConfig, {"scope_dense_sure": "high"}, "scope_dense_floor and scope_dense_sure must be cosines in [-1, 1]"),
    (DialogueLimits, {"max_input_chars": 10**6}, "max_input_chars must be at most the parser's"),
    (DialogueLimits, {"options_when_unsure": "no"}, "options_when_unsure must be true or false"),
])
def test_each_group_refuses_a_bad_value_in_one_line(group, options, message):
    with pytest.raises(ConfigError) as caught:
        group(**options)
    text = str(caught.value)
    assert text.startswith(f"engine config: {message}") and "\n" not in text
    with pytest.raises(ConfigError, match="^engine config: "):  # the same check when a saved spec is read
        EngineConfig.from_dict(options)


def test_groups_keep_the_defaults_and_store_numbers_as_floats():
    config = EngineConfig()
    assert set(config.to_dict()) == set(GROUPS) and len(FLAT_OPTIONS) == 39
    assert (config.retrieval.candidates, config.clarify.clarify_margin, config.abstention.abstain_below,
            config.scope.scope_mass, config.dialogue.max_traces) == (100, 0.04, 0.21, 40.0, 50)
    assert isinstance(DemotionConfig(presupposition_penalty=1).presupposition_penalty, float)


def test_a_flat_saved_config_and_the_nested_one_load_equal():
    nested = {group: {name: FLAT[name] for name, owner in FLAT_OPTIONS.items() if owner == group} for group in GROUPS}
    old, new = EngineConfig.from_dict(FLAT), EngineConfig.from_dict(nested)
    assert old == new != EngineConfig()
    assert new.to_dict() == nested and EngineConfig.from_dict(new.to_dict()) == new
    assert (new.retrieval.candidates, new.position.step1_position, new.scope.scope_mass) == (40, "standalone", None)
    # a spec saved before the groups builds the same engine as one saved now
    spec = {"format": 1, "ranker": "rules", "config": FLAT}
    again = EngineSpec.from_dict(json.loads(json.dumps(EngineSpec.from_dict(spec).to_dict())))
    assert again.config == new and again.to_dict()["config"] == nested


@pytest.mark.parametrize(("data", "message"), [
    ({"candidatez": 3}, "unknown option(s) candidatez"),
    ({"retrieval": {"depth": 3}}, "unknown option(s) retrieval.depth"),
    ({"retrieval": 5}, "retrieval must be an object of options"),
    ({"candidates": 5, "retrieval": {"candidates": 6}}, "candidates is given twice (flat and in retrieval)"),
    ([], "expected an object"),
])
def test_a_bad_config_object_is_refused_in_one_line(data, message):
    with pytest.raises(ConfigError) as caught:
        EngineConfig.from_dict(data)
    assert str(caught.value).startswith(f"engine config: {message}") and "\n" not in str(caught.value)


def test_a_group_must_be_its_options_object():
    with pytest.raises(ConfigError, match="retrieval must be an object of its options"):
        EngineConfig(retrieval={"candidates": 5})
