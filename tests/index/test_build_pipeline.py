"""A dense build's pipeline: SG phrases off the parse (no second spaCy pass), vectors encoded while parsing.

The index, vectors and phrases must equal those of the separate passes they replace.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from index_helpers import CountingEncoder, StandInParser, small_corpus

import index.builder
import index.sg_store
from index.builder import build_index
from index.dense_store import DenseStore, build_dense_store
from index.documents import build_document
from index.sg_store import SGPhraseStore, build_sg_store
from index.sqlite_index import SqliteIndex


@pytest.fixture()
def sg_parses(monkeypatch) -> list[str]:
    """Record every text the SG store still runs spaCy over."""
    seen: list[str] = []
    real = index.sg_store.phrases_of_texts

    def counting(texts, **kwargs):
        seen.extend(texts)
        return real(texts, **kwargs)

    monkeypatch.setattr(index.sg_store, "phrases_of_texts", counting)
    return seen


class NoAnalysisRuleParser:
    """The rules parser as a parser that hands out no analysis: the SG phrases need their own spaCy pass."""

    analyze_and_parse_many = None

    def __init__(self, parser) -> None:
        self._parser = parser
        self.name = parser.name

    def parse(self, text):
        return self._parser.parse(text)

    def parse_many(self, texts, **kwargs):
        return self._parser.parse_many(texts, **kwargs)


def _contents(out: Path) -> tuple[list, DenseStore, SGPhraseStore]:
    with SqliteIndex(out) as ix:
        docs = [ix.get(i).to_dict() for i in ix.ids()]
    return docs, DenseStore.load(out), SGPhraseStore.load(out)


def _same_side_files(a: tuple, b: tuple) -> None:
    (_, dense_a, sg_a), (_, dense_b, sg_b) = a, b
    assert dense_a.ids == dense_b.ids and dense_a.model == dense_b.model
    np.testing.assert_allclose(np.asarray(dense_a.vectors), np.asarray(dense_b.vectors), atol=1e-6, rtol=0)
    assert sg_a.ids == sg_b.ids
    for doc_id in sg_a.ids:  # entry by entry: a difference names the answer
        assert sg_a.encoded(doc_id) == sg_b.encoded(doc_id), doc_id


@pytest.mark.dense
def test_builtin_build_equals_the_separate_passes(tmp_path, rules_parser, sg_parses, monkeypatch) -> None:
    from data.builtin import load_builtin_corpus
    from index.dense import DenseEncoder, dense_available

    if not dense_available():
        pytest.skip("the [dense] extra is not installed")
    corpus, encoder = load_builtin_corpus(), DenseEncoder()
    monkeypatch.setattr(index.builder, "ENCODE_WHILE_PARSING", True)  # the most changed path: encoding alongside
    new = tmp_path / "new.sqlite"
    report = build_index(dialogues=corpus, parser=rules_parser, backend="sqlite", out=new, progress=False,
                         dense=True, encoder=encoder)
    assert report.indexed > 400 and sg_parses == []  # every phrase came from the parse itself
    built = _contents(new)

    # the same build as separate passes: parse, then encode the finished index, then run spaCy again for phrases
    monkeypatch.setattr(index.builder, "ENCODE_WHILE_PARSING", False)
    old = tmp_path / "old.sqlite"
    build_index(dialogues=corpus, parser=NoAnalysisRuleParser(rules_parser), backend="sqlite", out=old,
                progress=False, dense=True, encoder=encoder)
    assert len(sg_parses) == report.indexed
    separate = _contents(old)
    assert built[0] == separate[0]  # documents
    _same_side_files(built, separate)

    # and both equal the stores made straight from the index's texts
    with SqliteIndex(new) as ix:
        ids, texts = ix.answer_texts()
    direct = build_sg_store(ids=ids, texts=texts, progress=False)
    assert all(direct.encoded(i) == built[2].encoded(i) for i in ids)
    np.testing.assert_allclose(np.asarray(built[1].vectors),
                               build_dense_store(ids=ids, texts=texts, encoder=encoder, progress=False).vectors,
                               atol=1e-6, rtol=0)


@pytest.mark.parametrize("overlap", [True, False])
def test_answers_a_finish_step_adds_are_parsed_and_encoded_once(tmp_path, rules_parser, sg_parses, monkeypatch,
                                                                  overlap) -> None:
    api_text = "Top up the coolant once the engine is cold, then check the hoses for leaks."

    def finish(new_index) -> None:
        new_index.add([build_document(doc_id="api-1", dialogue_id="api", position=1, text=api_text,
                                      tree=StandInParser().parse(api_text))])

    encoder = CountingEncoder()
    out = tmp_path / "answers.sqlite"
    monkeypatch.setattr(index.builder, "ENCODE_WHILE_PARSING", overlap)
    report = build_index(dialogues=small_corpus(), parser=rules_parser, backend="sqlite", out=out, progress=False,
                         dense=True, encoder=encoder, finish=finish)
    docs, dense, sg = _contents(out)
    assert sg_parses == [api_text]  # the corpus answers' phrases came from their parse
    assert sorted(encoder.seen) == sorted(d["text"] for d in docs)  # each answer encoded once
    assert dense.ids == sg.ids == [d["id"] for d in docs] and len(docs) == report.indexed + 1
    direct = build_sg_store(ids=sg.ids, texts=[d["text"] for d in docs], progress=False)
    assert all(direct.encoded(i) == sg.encoded(i) for i in sg.ids)


def test_rebuild_reusing_side_files_parses_and_encodes_only_what_changed(tmp_path, rules_parser,
                                                                         sg_parses) -> None:
    out = tmp_path / "answers.sqlite"
    build_index(dialogues=small_corpus(), parser=rules_parser, backend="sqlite", out=out, progress=False,
                dense=True, encoder=CountingEncoder())
    corpus = small_corpus()
    position, turn = corpus[0].answers()[0]
    turn = replace(turn, text="Replace the starter relay; the old one sticks when it is hot.")
    corpus[0] = replace(corpus[0], turns=(*corpus[0].turns[:position], turn, *corpus[0].turns[position + 1:]))
    encoder = CountingEncoder()
    build_index(dialogues=corpus, parser=rules_parser, backend="sqlite", out=out, progress=False, dense=True,
                encoder=encoder, reuse_side_files=True)
    assert encoder.seen == [turn.text] and sg_parses == []  # the edited answer's phrases came from its parse
    docs, dense, sg = _contents(out)
    direct = build_sg_store(ids=sg.ids, texts=[d["text"] for d in docs], progress=False)
    assert all(direct.encoded(i) == sg.encoded(i) for i in sg.ids) and dense.ids == sg.ids


class FailingEncoder(CountingEncoder):
    def encode(self, texts, *, progress: bool = False):
        raise RuntimeError("simulated encoder failure")


@pytest.mark.parametrize("parser_name", ["standin", "rules"])
def test_failure_while_encoding_during_the_parse_keeps_the_old_index(tmp_path, rules_parser, parser_name,
                                                                     monkeypatch) -> None:
    monkeypatch.setattr(index.builder, "ENCODE_WHILE_PARSING", True)
    parser = rules_parser if parser_name == "rules" else StandInParser()
    out = tmp_path / "answers.sqlite"
    build_index(dialogues=small_corpus()[:2], parser=parser, backend="sqlite", out=out, progress=False,
                dense=True, encoder=CountingEncoder())
    before = sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm")))
    with pytest.raises(RuntimeError, match="simulated encoder failure"):
        build_index(dialogues=small_corpus(), parser=parser, backend="sqlite", out=out, progress=False,
                    dense=True, encoder=FailingEncoder())
    after = sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm")))
    assert after == before  # same index, same side files, no temp or lock file


def test_only_the_sg_pipeline_s_own_analyses_stand_in_for_its_pass(rules_parser) -> None:
    from parsers.nlp_spacy import SpacyBackend, load_spacy
    from parsers.phrase_chunks import phrases_from_analysis_of

    assert load_spacy() is load_spacy(None) is load_spacy(model=None)  # one default pipeline per process
    assert phrases_from_analysis_of(rules_parser.nlp)  # skips NER only: phrases never read entities
    assert phrases_from_analysis_of(SpacyBackend())
    assert not phrases_from_analysis_of(SpacyBackend(disable=("ner", "lemmatizer")))  # lemmas are the phrases
    assert not phrases_from_analysis_of(StandInParser())
