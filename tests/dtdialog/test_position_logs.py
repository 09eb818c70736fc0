"""A team's own Q/A file cut from support logs: its rows hold no dialogue position, so every answer is an "opening".

A row whose answer was a later turn of its conversation ("Then the battery is not holding a charge ...") still reads
as one, and must not be the first thing a customer with a battery question sees.
"""

from __future__ import annotations

import csv

import pytest

ROWS = [
    ("My battery is dead every morning, what should I check?",
     "Then the battery is not holding a charge, so have the dead battery load-tested every morning at a parts store "
     "and replace it if it fails."),
    ("Car battery keeps dying overnight.",
     "A battery that goes flat overnight is usually drained by something left on: do a parasitic draw test, an "
     "ammeter in series with the negative cable, and pull the fuses one at a time to find the dead circuit."),
    ("My brakes squeal when I stop.",
     "A squeal when braking usually comes from the wear indicator on the pads; measure the pad thickness."),
    ("The check engine light is on.",
     "Read the code with an OBD2 scanner first; the code tells you which system to look at."),
]
QUESTION = "My battery is dead every morning. What should I check?"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from dtdialog.setup.assembly import EngineSpec, build_engine
    from parsers.base import get_parser
    from parsers.errors import DTDialogError

    try:
        parser = get_parser("rules")
        parser.parse("The car starts.")
    except DTDialogError as exc:
        pytest.skip(f"rule parser unavailable: {exc}")
    home = tmp_path_factory.mktemp("logs")
    path = home / "logs.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("QUESTION", "ANSWER"), *ROWS])
    built = build_engine(EngineSpec(corpus=str(path), corpus_format="csv", index_path=str(home / "logs.sqlite"),
                                    ranker="rules", sessions_path=str(home / "s.sqlite")), parser=parser,
                         progress=False)
    yield built
    built.close()


def test_a_logged_later_turn_in_a_qa_file_is_not_a_first_answer(engine):
    import dataclasses

    selector = engine.selector
    base = selector.config
    try:  # the failure: with the position stage off the "Then ..." row, the best keyword match, comes first
        selector.config = dataclasses.replace(base, position=dataclasses.replace(base.position, step1_position="off"))
        assert selector.rank(question=QUESTION, size=3)[0].document.text.startswith("Then")
    finally:
        selector.config = base
    outcome = selector.rank_outcome(question=QUESTION, step=0, size=3)
    assert outcome.candidates[0].document.text.startswith("A battery that goes flat overnight")
    assert "back-pointing opener: then" in outcome.to_dict()["position"]["reasons"].values()
    manager = engine.manager
    result = manager.handle(session_id=manager.start_session(), text=QUESTION)
    assert not result.reply.startswith("Then"), result.reply
