"""Every backend stores an answer's dialogue position (role, stands_alone) and gives it back after a reload."""

from __future__ import annotations

import pytest
from index_helpers import BACKEND_PARAMS, loaded_index

from data.model import ANSWER, CUSTOMER, QUESTION, Dialogue, Turn
from index.builder import build_index
from index.documents import build_document
from index.position import FOLLOWUP, OPENING, position_of
from index.sqlite_index import SqliteIndex

DIALOGUES = [
    Dialogue("shift", (
        Turn(QUESTION, "My automatic gearbox will not leave park."),
        Turn(ANSWER, "Check the brake light switch first. The shift interlock needs its signal."),
        Turn(CUSTOMER, "The brake lights work."),
        Turn(ANSWER, "Then focus on the range switch. It sits on the side of the gearbox."),
    )),
    # two customer turns before the first answer: that answer still opens the dialogue
    Dialogue("late", (
        Turn(QUESTION, "Hello."),
        Turn(CUSTOMER, "My horn stopped working."),
        Turn(ANSWER, "Test the horn fuse and the horn relay."),
    )),
]


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_backends_keep_the_position_fields(backend, standin_parser, tmp_path):
    docs = [build_document(doc_id=d.answer_id(p), dialogue_id=d.id, position=p, text=t.text,
                           tree=standin_parser.parse(t.text)) for d in DIALOGUES for p, t in d.answers()]
    with loaded_index(backend, docs, tmp_path) as index:
        opening, followup = position_of(index.get("shift#1")), position_of(index.get("shift#3"))
    assert opening.role == OPENING and opening.stands_alone
    assert followup.role == FOLLOWUP and not followup.stands_alone and followup.reason


def test_the_builder_records_the_role_from_the_dialogue_and_it_survives_a_reopen(standin_parser, tmp_path):
    out = tmp_path / "answers.sqlite"
    build_index(dialogues=DIALOGUES, parser=standin_parser, backend="sqlite", out=out, progress=False)
    with SqliteIndex(out) as index:
        metas = {doc_id: index.get(doc_id).meta for doc_id in ("shift#1", "shift#3", "late#2")}
    assert {k: (m["role"], m["stands_alone"]) for k, m in metas.items()} == {
        "shift#1": (OPENING, True), "shift#3": (FOLLOWUP, False), "late#2": (OPENING, True)}
