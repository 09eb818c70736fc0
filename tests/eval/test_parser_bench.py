"""The GUM parser benchmark: helpers, and a small real run."""

from __future__ import annotations

import json

import pytest

from eval.parser_bench import (
    CAR_ANSWERS,
    corpus_name,
    five_sentence_windows,
    main,
    markdown,
    percentile,
    run,
    targets_line,
)
from parsers.gum import GumDocument
from parsers.tree import EDU, DiscourseTree, Node


def test_percentile():
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0
    assert percentile([1.0, 2.0], 100) == 2.0
    assert percentile([10.0, 20.0], 50) == 15.0


def test_car_answers_have_five_sentences():
    for text in CAR_ANSWERS:
        assert sum(text.count(c) for c in ".?!") == 5, text


def test_five_sentence_windows():
    edus = tuple(EDU(index=i, text=f"S{i}.", start=4 * i, end=4 * i + 3, sentence=i) for i in range(7))
    root = Node.leaf(0)
    for i in range(1, 7):
        root = Node.relate("Joint", [root, Node.leaf(i)], "NN")
    tree = DiscourseTree(text=" ".join(e.text for e in edus), edus=edus, root=root)
    assert five_sentence_windows([tree]) == ["S0. S1. S2. S3. S4."]


SCORES = {f"{k}_{m}": 0.5 for k in ("seg", "span", "nuc", "rel", "full", "nondefault", "nondefault_rel")
          for m in ("p", "r", "f1")}


def _result(**extra):
    return {"scores": SCORES, "corpus": "GUM", "split": "test", "documents": 3, "parser": "rules",
            "texts_per_s": 1.0, "median_ms_5_sentences": 10.0, "p95_ms_5_sentences": 20.0,
            "genres": {"news": {"documents": 2, **SCORES}}, **extra}


def test_markdown_has_published_column():
    result = _result()
    text = markdown(result)
    assert text.startswith("GUM test, 3 documents, predicted segmentation")
    assert "| Relation F1 | 50.0 | 49.6 | 34.2 |" in text  # isanlp-rst, then DMRST
    assert "| EDU segmentation F1 (P / R) | 50.0 (50.0 / 50.0) | 95.5 | – |" in text
    assert "GUM 9.1" in text and "version is unknown" in text
    assert "| news | 2 | 50.0 / 50.0 / 50.0 / 50.0 / 50.0 |" in text
    both = markdown([result, {"parser": "trained", "corpus": "GUM", "split": "test", "documents": 3,
                              "supported": False}])
    assert "| Span F1 | 50.0 | not supported | 67.4 | 58.0 |" in both


def test_another_corpus_is_named_and_not_set_beside_gums_published_rows():
    text = markdown(_result(corpus="GENTLE"))
    assert text.startswith("GENTLE test, 3 documents")
    assert "GUM" not in text and "isanlp" not in text and "DMRST" not in text
    assert "| Relation F1 | 50.0 |" in text
    assert "isanlp" not in markdown(_result(split="dev"))


def test_gold_edus_print_segmentation_as_gold_and_no_end_to_end_rows():
    text = markdown(_result(gold_edus=True, scores={**SCORES, "seg_f1": 1.0}))
    assert "| EDU segmentation F1 (P / R) | gold |" in text and "100.0" not in text
    assert "isanlp" not in text and "gold EDUs" in text
    assert "Per genre (F1 x 100: Span / Nuc / Rel / Full)" in text and "| news | 2 | 50.0 / 50.0 / 50.0 / 50.0 |" in text


def test_corpus_name_comes_from_the_document_names(tmp_path):
    tree = DiscourseTree(text="a", edus=(EDU(index=0, text="a", start=0, end=1, sentence=0),), root=Node.leaf(0))
    def doc(name):
        return GumDocument(name=name, genre="news", split="test", tree=tree)
    assert corpus_name([doc("GUM_news_a"), doc("GUM_news_b")], tmp_path) == "GUM"
    assert corpus_name([doc("GENTLE_dictionary_a")], tmp_path / "gum_rst") == "GENTLE"
    assert corpus_name([doc("GUM_news_a"), doc("GENTLE_news_b")], tmp_path / "mixed") == "mixed"


def test_targets_line_says_met_or_missed():
    scores = {"seg_f1": 0.95, "span_f1": 0.5, "nuc_f1": 0.5, "rel_f1": 0.2}
    line = targets_line({"parser": "neural", "scores": scores, "five_sentence_texts_per_s": 25.0})
    assert "seg_f1 95.0 (met" in line and "span_f1 50.0 (missed" in line and "25.0 five-sentence texts/s (met" in line
    gold = targets_line({"parser": "neural", "gold_edus": True, "scores": {"span_f1": 0.7, "rel_f1": 0.3}})
    assert "span_f1 70.0 (met" in gold and "rel_f1 30.0 (missed" in gold and "seg_f1" not in gold


def test_bad_options_are_one_line_errors(capsys):
    assert main(["--parser", " , "]) == 2
    assert capsys.readouterr().err.startswith("error: --parser needs a name")
    assert main(["--latency-repeats", "0"]) == 2


def test_bad_gum_dir_is_one_line_error(tmp_path, capsys):
    assert main(["--gum", str(tmp_path), "--limit", "1"]) == 2
    assert capsys.readouterr().err.startswith("error: GUM splits not found")


@pytest.mark.gum
@pytest.mark.slow
def test_small_real_run(gum_dir, tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["--gum", str(gum_dir), "--split", "dev", "--limit", "1", "--latency-repeats", "1",
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("GUM dev, 1 documents") and "Relation F1" in printed
    assert "isanlp" not in printed and "targets" not in printed  # published rows and targets are GUM test only
    result = json.loads(out.read_text())
    assert result["corpus"] == "GUM"
    assert result["documents"] == 1 and result["skipped_text_mismatch"] == 0
    assert 0.5 < result["scores"]["seg_f1"] <= 1.0
    assert result["median_ms_5_sentences"] > 0 and result["five_sentence_texts_per_s"] > 0
    assert list(result["genres"]) == [result_genre(gum_dir)]


def result_genre(gum_dir):
    from parsers.gum import iter_gum

    return next(iter_gum(gum_dir, split="dev")).genre


@pytest.mark.gum
def test_gold_edus_mode_reports_parsers_that_cannot_take_them(gum_dir):
    result = run(gum_dir, split="dev", parser_name="rules", limit=1, gold_edus=True)
    assert result["supported"] is False and "pre-segmented" in result["reason"]
