"""The vocabulary module: words per role, stop words per role, stems, RR tokens built on them."""

import pytest

from index import vocabulary as v
from index.terms import relation_key, rr_tokens


def test_retrieval_words_keep_unicode_letters_and_inner_hyphens_and_apostrophes():
    assert v.words_of("The Würth V-belt won't fit the 1584cm³ engine_bay!") == [
        "the", "würth", "v-belt", "won't", "fit", "the", "1584cm³", "engine", "bay"]


def test_entity_words_are_ascii_only_so_accented_words_split_as_before():
    # the entity role keeps its ASCII rule: a unified regex would change 47 corpus texts' entity terms
    assert v.entity_words("The Würth V-belt won't fit the 1584cm³ engine") == [
        "the", "w", "rth", "v-belt", "won't", "fit", "the", "1584cm", "engine"]
    assert v.entity_words("replace the ECU") == v.words_of("replace the ECU")


def test_search_tokens_split_on_everything_but_letters_and_digits():
    assert v.search_tokens("V-belt's") == ["v", "belt", "s"]
    assert v.search_tokens("--") == []


def test_bm25_tokens_are_ascii_alphanumeric_runs():
    assert v.bm25_tokens("Won't start: 12V café") == ["won", "t", "start", "12v", "caf"]


def test_both_stop_lists_extend_the_function_words():
    assert v.FUNCTION_WORDS < v.RETRIEVAL_STOP_WORDS
    assert v.FUNCTION_WORDS < v.ENTITY_STOP_WORDS
    assert {"the", "and", "won't", "'s"} <= v.FUNCTION_WORDS


@pytest.mark.parametrize(("word", "retrieval", "entity"), [
    ("battery", True, True),
    ("the", False, False),
    ("thanks", True, False),    # a conversational filler: a keyword, never a shared entity
    ("something", True, False),
    ("like", False, True),      # retrieval-only stop word
    ("replace", True, False),   # a light verb: a keyword, not an entity on its own
    ("x", False, False),
    ("2019", True, False),      # years are keywords; numbers never carry an entity
    ("12", False, False),
])
def test_content_words_per_role(word, retrieval, entity):
    assert v.is_content_word(word) is retrieval
    assert v.is_entity_word(word) is entity


def test_content_words_lower_case_and_drop_repeats_in_first_occurrence_order():
    assert v.content_words(["Battery", "the", "car", "battery", "Car", "  "]) == ["battery", "car"]


def test_stem_is_porter_and_meets_inflections():
    assert v.stem("removing") == v.stem("removed") == v.stem("remove") == "remov"
    assert v.stem("batteries") == "batteri"


def test_fts_stemmer_gives_the_sqlite_index_terms():
    stemmer = v.FtsStemmer()
    try:
        stems = stemmer.stems(["removing", "contrast_starting", "--"])
    finally:
        stemmer.close()
    assert stems == {"removing": "remov", "contrast_starting": "contrast_start", "--": None}


def test_rr_tokens_tag_content_pieces_with_the_relation_key():
    assert relation_key("Manner-Means") == "mannermeans"
    assert rr_tokens("Contrast", ["the", "start", "V-belt", "start"]) == [
        "contrast_start", "contrast_belt"]


def test_the_vocabulary_has_one_home():
    """No module of retrieval or agreement defines its own stop list, stemmer or word tokeniser."""
    import re
    from pathlib import Path

    root = Path(v.__file__).resolve().parents[1]
    own = re.compile(r"^(\w*STOP_?WORDS\w*)\s*(?::[^=]*)?=|PorterStemmer\(|SnowballStemmer\(|^_WORD\s*=", re.M)
    offenders = []
    for package in ("index", "dtdialog"):
        for path in sorted((root / package).rglob("*.py")):
            if path.name == "vocabulary.py":
                continue
            offenders += [f"{path.relative_to(root)}: {m.group(0)}" for m in own.finditer(path.read_text())]
    assert offenders == []
