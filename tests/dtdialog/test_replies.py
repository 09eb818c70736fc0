"""The manager's wording comes from one ``Replies`` object, and it reaches the selector only through its port."""

from __future__ import annotations

from engine_helpers import BRAKE_Q, CONSTRAINT_Q, PAPER_Q, car_world, text_of

from dtdialog.dialogue.manager import GREETING, DialogueManager, SelectorPort
from dtdialog.dialogue.replies import DEFAULT_REPLIES, Replies
from dtdialog.dialogue.session_store import SessionStore
from dtdialog.selection.clarification import ClarifyOption, PendingChoice, prompt_text


def test_every_template_formats_and_options_are_listed_in_order():
    options = [ClarifyOption(1, "fuel pressure", "a#1"), ClarifyOption(2, "none of these", "")]
    text = DEFAULT_REPLIES.options_text(options)
    assert text.splitlines() == [DEFAULT_REPLIES.choose, "  1) fuel pressure", "  2) none of these"]
    assert prompt_text(PendingChoice(options=options), again=True).startswith(DEFAULT_REPLIES.choose_again)
    assert "4000" in DEFAULT_REPLIES.too_long_text(4000)
    assert DEFAULT_REPLIES.handoff_text("why", 7).count("why") == 1 and "(messages so far: 7)" in DEFAULT_REPLIES.handoff_text("why", 7)
    assert DEFAULT_REPLIES.fallback_text('"x"', found_on_topic=True) != DEFAULT_REPLIES.fallback_text('"x"', found_on_topic=False)
    assert '"x"' in DEFAULT_REPLIES.fallback_text('"x"', found_on_topic=False)
    assert GREETING == DEFAULT_REPLIES.greeting


def test_a_vague_opening_gets_the_detail_question_not_a_refusal():
    from dtdialog.setup.profile import builtin_profile

    for replies in (DEFAULT_REPLIES, builtin_profile().replies()):
        assert replies.out_of_scope_text("vague") == replies.vague_opening
        assert replies.vague_opening != replies.out_of_scope_domain and "sorry" not in replies.vague_opening.lower()
    assert "car" in builtin_profile().replies().vague_opening


def test_a_manager_speaks_the_wording_it_is_given(tmp_path):
    selector, default, _ = car_world(tmp_path, clarify_margin=0.0)
    custom = Replies(greeting="Hello, what is wrong with the boat?",
                     reset="Okay, new topic.", concluded="Happy sailing!",
                     handoff="Passing you on ({reason}; {messages} lines).")
    manager = DialogueManager(selector=selector, store=SessionStore(tmp_path / "custom.sqlite"), replies=custom)
    sid = manager.start_session()
    assert manager.handle(session_id=sid, text="thanks").reply == custom.greeting
    manager.handle(session_id=sid, text=text_of(PAPER_Q))
    assert manager.handle(session_id=sid, text="thanks, that fixed it").reply == custom.concluded
    assert manager.handle(session_id=sid, text="start over").reply == custom.reset
    assert manager.handle(session_id=sid, text="human").reply == f"Passing you on ({custom.handoff_asked}; 9 lines)."  # 4 turns and this one
    # the default manager still says the default wording
    other = default.start_session()
    assert default.handle(session_id=other, text="thanks").reply == DEFAULT_REPLIES.greeting


class PortOnly:
    """Exposes exactly the ``SelectorPort`` members of a selector: any other attribute access fails."""

    _names = frozenset({"config", "plan", "rank_outcome", "document", "terms_of_text", "terms_of_edus", "violates",
                        "answer_edus", "answer_tree", "answer_terms", "tried_in"})

    def __init__(self, selector):
        self._selector = selector

    def __getattr__(self, name):
        if name not in PortOnly._names:
            raise AttributeError(f"the manager reached past the selector port: {name}")
        return getattr(self._selector, name)


def test_the_real_selector_satisfies_the_port(tmp_path):
    selector, _, _ = car_world(tmp_path)
    assert isinstance(selector, SelectorPort)
    assert isinstance(PortOnly(selector), SelectorPort)
    assert set(PortOnly._names) == {n for n in dir(SelectorPort) if not n.startswith("_")} | {"config"}


def _chat(manager, turns):
    sid = manager.start_session()
    return [(r.kind, r.answer_id, r.reply, r.state) for r in (manager.handle(session_id=sid, text=t) for t in turns)]


def test_the_manager_needs_nothing_but_the_port(tmp_path):
    """Clarify, choose by phrase, constrain the options, retry and hand off through the port alone, as on the selector."""
    scripts = [
        [text_of(BRAKE_Q), "what about the tires?", "the grease one", "didn't help", "no", "no"],
        [text_of(PAPER_Q), "I can't remove the engine", "none of these", "thanks"],
        [text_of(CONSTRAINT_Q).replace(" I can't remove the engine.", ""), "I can't remove the engine", "thanks"],
    ]
    selector, _, _ = car_world(tmp_path, clarify_margin=1.0, clarify_ratio=0.0, constraint_penalty=1.0)
    for k, turns in enumerate(scripts):
        direct = DialogueManager(selector=selector, store=SessionStore(tmp_path / f"direct{k}.sqlite"))
        ported = DialogueManager(selector=PortOnly(selector), store=SessionStore(tmp_path / f"port{k}.sqlite"))
        assert _chat(ported, turns) == _chat(direct, turns)
    kinds = [kind for kind, *_ in _chat(ported, scripts[0])]
    assert kinds[0] == "clarify" and "answer" in kinds
