"""Topical coherence: an answer sharing one entity with the question never competes with on-topic ones."""

from __future__ import annotations

from engine_helpers import PAPER_Q, TableParser, make_index, text_of

from dtdialog.dialogue.clarify import competes
from dtdialog.dialogue.manager import DialogueManager
from dtdialog.dialogue.session_store import SessionStore
from dtdialog.selection.selector import AnswerSelector
from dtdialog.setup.engine_config import ClarifyConfig, EngineConfig

ANSWERS = {
    "nostart#1": ("Condition", "SN", ["If the engine gets spark from the new plugs, ignition coils and battery,",
                                      "the car should start for a second on starting fluid."]),
    "coil#1": ("Cause", "NS", ["A car may not start with new ignition coils and spark plugs",
                               "because their connectors were swapped."]),
    # agrees with the question only through "battery": the bug offered such an HVAC answer next to the fix
    "hvac#1": ("Condition", "SN", ["If the battery died,",
                                   "the blend door actuator of the dual-zone climate control loses its calibration."]),
}


def _world(tmp_path, **config):
    cfg = EngineConfig.from_dict(config)
    selector = AnswerSelector(index=make_index(tmp_path / "a.sqlite", ANSWERS), parser=TableParser([PAPER_Q]),
                              config=cfg)
    return selector, DialogueManager(selector=selector, store=SessionStore(tmp_path / "s.sqlite"), config=cfg)


def test_off_topic_answer_has_low_topic_and_is_never_offered(tmp_path):
    selector, manager = _world(tmp_path, clarify_margin=1.0)
    outcome = selector.rank_outcome(question=text_of(PAPER_Q))
    topic = {c.id: c.features["topic"] for c in outcome.candidates + outcome.rejected if "topic" in c.features}
    assert topic["nostart#1"] > topic["hvac#1"] and topic["coil#1"] > topic["hvac#1"]
    assert outcome.candidates[0].id == "nostart#1"
    result = manager.handle(session_id=manager.start_session(), text=text_of(PAPER_Q))
    offered = [o.answer_id for o in result.options] if result.kind == "clarify" else [result.answer_id]
    assert "hvac#1" not in offered and offered[0] == "nostart#1"


def test_clarify_ratio_zero_restores_the_old_margin_only_trigger(tmp_path):
    _, manager = _world(tmp_path, clarify_margin=1.0, clarify_ratio=0.0)
    result = manager.handle(session_id=manager.start_session(), text=text_of(PAPER_Q))
    offered = [o.answer_id for o in result.options if o.answer_id]
    assert result.kind == "clarify" and len(offered) >= 2
    assert "hvac#1" not in offered          # still dropped by the selector's topic filter, whatever the trigger


def test_competing_needs_close_score_score_ratio_and_topic_ratio(tmp_path):
    selector, _ = _world(tmp_path)
    ranked = selector.rank(question=text_of(PAPER_Q))
    best = ranked[0]
    cfg = EngineConfig(clarify=ClarifyConfig(clarify_margin=1.0, clarify_ratio=0.8))

    def cand(score, topic_ratio):
        from dataclasses import replace

        return replace(best, score=score, features={**best.features, "topic_ratio": topic_ratio})

    assert competes(cand(best.score * 0.95, 0.9), best, cfg)
    assert not competes(cand(best.score * 0.95, 0.3), best, cfg)       # close score, other topic
    assert not competes(cand(best.score * 0.5, 1.0), best, cfg)        # weak on its own
    assert not competes(cand(best.score * 0.95, 0.9), best, EngineConfig(clarify=ClarifyConfig(clarify_margin=0.0)))
