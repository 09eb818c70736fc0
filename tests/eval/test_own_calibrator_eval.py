"""``eval.own_calibrator``: the seeded halves a calibrator is fitted on and measured on."""

from __future__ import annotations

import pytest

from eval.datasets import EvalDialogue, EvalSet, PoolAnswer
from eval.own_calibrator import halves, main
from parsers.errors import InputError


def _set(n: int, *, extra: int = 0) -> EvalSet:
    dialogues = tuple(EvalDialogue(id=f"d{i}", question=f"question {i}", answer_ids=(f"d{i}#1",)) for i in range(n))
    pool = tuple(PoolAnswer(id=f"d{i}#1", text=f"answer {i}", dialogue_id=f"d{i}", position=1) for i in range(n))
    pool += tuple(PoolAnswer(id=f"x{i}#1", text=f"extra {i}", dialogue_id=f"x{i}", position=1) for i in range(extra))
    return EvalSet(name="toy", dialogues=dialogues, pool=pool)


def test_the_halves_are_disjoint_seeded_and_carry_only_their_own_answers():
    a, b = halves(_set(41, extra=3), seed=13)
    ids_a, ids_b = {d.id for d in a.dialogues}, {d.id for d in b.dialogues}
    assert not ids_a & ids_b and len(ids_a | ids_b) == 41 and abs(len(ids_a) - len(ids_b)) <= 1
    assert (a.name, b.name) == ("toy-A", "toy-B")
    for half, mine in ((a, ids_a), (b, ids_b)):
        owners = {p.dialogue_id for p in half.pool}
        # each half's gold answers are there, the other half's are not, the extra candidates are in both
        assert owners == mine | {"x0", "x1", "x2"}
    assert halves(_set(41, extra=3), seed=13) == (a, b)
    assert {d.id for d in halves(_set(41), seed=14)[0].dialogues} != ids_a


def test_too_few_dialogues_to_split_is_a_one_line_error(tmp_path, capsys):
    with pytest.raises(InputError, match="19 dialogues are too few"):
        halves(_set(19), seed=13)
    assert main(["--sets", "nonesuch", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().startswith("error: unknown set(s) nonesuch")
