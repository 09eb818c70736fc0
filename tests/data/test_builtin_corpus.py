"""The built-in car-repair corpus: shape, coverage and the loader's error reporting."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from data.builtin import builtin_corpus_dir, load_builtin_corpus, load_car_synonyms
from data.loaders import load_corpus
from data.model import Dialogue
from parsers.errors import InputError

# Sentence ends: a terminal mark followed by whitespace or the end of the text.
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")


@pytest.fixture(scope="module")
def corpus() -> list[Dialogue]:
    return load_builtin_corpus()


def test_corpus_is_large_enough(corpus: list[Dialogue]) -> None:
    assert len(corpus) >= 150


def test_no_two_answers_or_questions_share_a_near_identical_paragraph(corpus: list[Dialogue]) -> None:
    from data.near_duplicates import near_duplicates

    answers = [(d.id, turn.text) for d in corpus for _, turn in d.answers()]
    questions = [(d.id, d.question) for d in corpus]
    for items in (answers, questions):
        pairs = [(items[i][0], items[j][0], score) for i, j, score in near_duplicates([t for _, t in items])]
        assert not pairs, pairs[:5]


def test_every_dialogue_is_q_then_alternating_a_c_ending_with_a(corpus: list[Dialogue]) -> None:
    for dialogue in corpus:
        roles = "".join(turn.role for turn in dialogue.turns)
        assert re.fullmatch(r"QA(CA)+", roles), f"{dialogue.id}: roles {roles}"


def test_at_least_half_have_a_second_follow_up(corpus: list[Dialogue]) -> None:
    longer = [d for d in corpus if len(d.answers()) >= 3]
    assert len(longer) * 2 >= len(corpus)


def test_families_are_many_and_each_is_substantial(corpus: list[Dialogue]) -> None:
    families = Counter(d.meta["family"] for d in corpus)
    assert len(families) >= 10
    assert all(n >= 10 for n in families.values()), families


def test_family_matches_file_and_id_prefix(corpus: list[Dialogue]) -> None:
    for path in sorted(builtin_corpus_dir().glob("*.jsonl")):
        for dialogue in load_corpus(path, fmt="jsonl"):
            assert dialogue.meta["family"] == path.stem
            assert dialogue.id.startswith(path.stem + "-")
            assert dialogue.meta.get("topic"), dialogue.id


def test_ids_are_unique(corpus: list[Dialogue]) -> None:
    ids = [d.id for d in corpus]
    assert len(ids) == len(set(ids))


def test_no_answer_text_is_repeated(corpus: list[Dialogue]) -> None:
    answers = Counter(turn.text for d in corpus for _, turn in d.answers())
    repeated = [text for text, n in answers.items() if n > 1]
    assert not repeated


def test_every_question_has_several_sentences(corpus: list[Dialogue]) -> None:
    for dialogue in corpus:
        assert len(_SENTENCE_END.findall(dialogue.question)) >= 2, dialogue.id


def test_every_answer_has_several_sentences(corpus: list[Dialogue]) -> None:
    for dialogue in corpus:
        for _, turn in dialogue.answers():
            assert len(_SENTENCE_END.findall(turn.text)) >= 2, dialogue.id


def test_paper_example_dialogue_is_present(corpus: list[Dialogue]) -> None:
    by_id = {d.id: d for d in corpus}
    paper = by_id["no_start-paper-001"]
    text = " ".join(turn.text.lower() for turn in paper.turns)
    for term in ("spark plug", "battery", "ignition coil", "solenoid", "starting fluid", "fuel pressure",
                 "fuel pump", "noid light", "check engine light", "main relay"):
        assert term in text, term
    assert [t.role for t in paper.turns[:4]] == ["Q", "A", "C", "A"]


def test_no_start_has_competing_resolutions(corpus: list[Dialogue]) -> None:
    # Clarification only matters if similar complaints lead to different first answers.
    first_answers = " ".join(d.turns[1].text.lower() for d in corpus if d.meta["family"] == "no_start")
    for cause in ("starter", "immobilizer", "timing belt", "flood", "fuel pump", "crankshaft position sensor"):
        assert cause in first_answers, cause


def test_questions_carry_discourse_markers(corpus: list[Dialogue]) -> None:
    # The DT method needs contrast, condition, cause, temporal and attribution cues in questions.
    cues = {
        "contrast": (" but ", "although", "even though", " still "),
        "condition": (" only ", " if ", " when ", "whenever"),
        "temporal": ("after ", "since ", "before ", "started"),
        "attribution": (" said", " says", "told me", "suggested", "forum", "read "),
    }
    questions = [d.question.lower() for d in corpus]
    for relation, words in cues.items():
        share = sum(any(w in q for w in words) for q in questions) / len(questions)
        assert share >= 0.2, (relation, share)


def test_synonyms_load_and_are_lowercase() -> None:
    synonyms = load_car_synonyms()
    assert len(synonyms) >= 80
    for term, aliases in synonyms.items():
        assert term == term.lower() and aliases
        assert all(alias == alias.lower() for alias in aliases)
    assert "cel" in synonyms["check engine light"]
    assert "antifreeze" in synonyms["coolant"]


def test_no_alias_points_to_two_terms() -> None:
    synonyms = load_car_synonyms()
    owners = Counter(alias for aliases in synonyms.values() for alias in aliases)
    owners.update(synonyms.keys())
    assert [alias for alias, n in owners.items() if n > 1] == []


def _write_family(directory: Path, lines: list[str]) -> Path:
    path = directory / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _good_record(dialogue_id: str) -> str:
    return json.dumps({"id": dialogue_id, "turns": [{"role": "Q", "text": "Q. Q."}, {"role": "A", "text": "A."}]})


def test_malformed_json_line_names_file_and_line(tmp_path: Path) -> None:
    _write_family(tmp_path, [_good_record("x-001"), "", "{not json"])
    with pytest.raises(InputError, match=r"broken\.jsonl:3: .*JSON"):
        load_builtin_corpus(tmp_path)


def test_record_with_missing_field_names_file_and_line(tmp_path: Path) -> None:
    _write_family(tmp_path, [_good_record("x-001"), json.dumps({"id": "x-002"})])
    with pytest.raises(InputError, match=r"broken\.jsonl:2: "):
        load_builtin_corpus(tmp_path)


def test_unknown_role_names_file_and_line(tmp_path: Path) -> None:
    bad = json.dumps({"id": "x-002", "turns": [{"role": "X", "text": "hi"}]})
    _write_family(tmp_path, [bad])
    with pytest.raises(InputError, match=r"broken\.jsonl:1: .*role"):
        load_builtin_corpus(tmp_path)


def test_non_object_line_is_rejected(tmp_path: Path) -> None:
    _write_family(tmp_path, ["[1, 2]"])
    with pytest.raises(InputError, match=r"broken\.jsonl:1: .*object"):
        load_builtin_corpus(tmp_path)


def test_duplicate_id_across_files_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(_good_record("x-001") + "\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(_good_record("x-001") + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"b\.jsonl.*duplicate dialogue id .x-001."):
        load_builtin_corpus(tmp_path)


def test_binary_file_and_empty_directory_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no \*\.jsonl"):
        load_builtin_corpus(tmp_path)
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(InputError, match=r"bin\.jsonl.*binary"):
        load_builtin_corpus(tmp_path)
    (tmp_path / "bin.jsonl").write_bytes(b"\x81\x82 not utf-8\n")
    with pytest.raises(InputError, match=r"bin\.jsonl:1: .*UTF-8"):
        load_builtin_corpus(tmp_path)


def test_malformed_synonym_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "syn.json"
    path.write_text('{"coolant": "antifreeze"}', encoding="utf-8")
    with pytest.raises(InputError, match="must be a list of strings"):
        load_car_synonyms(path)
    path.write_text("{oops", encoding="utf-8")
    with pytest.raises(InputError, match="not a valid JSON"):
        load_car_synonyms(path)


def test_the_near_duplicate_finder_sees_a_copied_paragraph_among_distinct_ones() -> None:
    from data.near_duplicates import near_duplicates

    base = ("Check the battery terminals for white or green corrosion, clean them with a wire brush and baking soda, "
            "and tighten the clamps before you test the starter again.")
    texts = [base, "Rotate the tires every six months and keep them at the pressure on the door jamb label.",
             base.replace("before you test", "and only then test"),
             "A squeal that stops when you brake is usually the pad wear indicator touching the rotor."]
    assert [(i, j) for i, j, _ in near_duplicates(texts)] == [(0, 2)]
