"""The training pipeline end to end on a couple of GUM documents (fast; skipped without GUM)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from parsers.gum import NON_COMMERCIAL_GENRES
from parsers.train import (
    SEG_THRESHOLDS,
    evaluate,
    fit_component,
    label_examples,
    main,
    prepare,
    score_on_dev,
    seg_prf,
    segmenter_examples,
    select_default_bias,
    select_labeller,
    select_segmenter,
    select_size_penalty,
    select_structure,
)
from parsers.trained_parser import MANIFEST_FILE, MODEL_FILE, TrainedParser
from parsers.tree_builder import INTER, INTRA

pytestmark = pytest.mark.gum


def test_train_tiny_model_end_to_end(gum_dir, tmp_path, capsys):
    out = tmp_path / "tiny-model"
    code = main(["--gum", str(gum_dir), "--out", str(out), "--limit", "2", "--quick", "--no-test"])
    assert code == 0
    assert (out / MODEL_FILE).is_file()
    manifest = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert len(manifest["data"]["train_docs"]) == 2
    assert not any(name.split("_")[1] in NON_COMMERCIAL_GENRES for name in manifest["data"]["train_docs"])
    assert 0.0 <= manifest["scores"]["dev"]["seg_f1"] <= 1.0
    printed = json.loads(capsys.readouterr().out)
    assert "dev" in printed
    # The directory is loadable as a model by path.
    tree = TrainedParser(model=str(out)).parse("The engine stalled because the battery was dead.")
    assert tree.parser == "trained" and tree.edus


def test_train_reports_missing_corpus_as_error(tmp_path, capsys):
    code = main(["--gum", str(tmp_path / "nowhere"), "--out", str(tmp_path / "m"), "--quick"])
    assert code == 2
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


# --- the selection steps, each on two GUM documents per split ---------------------------------
@pytest.fixture(scope="module")
def tiny_splits(gum_dir):
    return (prepare(gum_dir, "train", limit=2, cache_dir=None), prepare(gum_dir, "dev", limit=2, cache_dir=None))


def test_select_segmenter_keeps_the_best_c_and_threshold_on_dev(tiny_splits):
    train_docs, dev_docs = tiny_splits
    choice = select_segmenter(train_docs, dev_docs, cs=(0.05, 1.0), seed=13)
    xd, yd = segmenter_examples(dev_docs)
    f1s = {}
    for c in (0.05, 1.0):
        comp = fit_component(*segmenter_examples(train_docs), C=c, seed=13)
        probs = comp.predict_proba(xd)[:, comp.classes.index(1)]
        f1s.update({(c, thr): seg_prf(probs, yd, thr)[2] for thr in SEG_THRESHOLDS})
    assert choice.dev_f1 == max(f1s.values()) == f1s[(choice.C, choice.threshold)]
    # Ties go to the first setting tried.
    assert (choice.C, choice.threshold) == next(k for k, v in f1s.items() if v == choice.dev_f1)


def test_select_labeller_keeps_the_most_accurate_c_per_level(tiny_splits):
    train_docs, dev_docs = tiny_splits
    lab_train, lab_dev = label_examples(train_docs), label_examples(dev_docs)
    choice = select_labeller(lab_train, lab_dev, cs=(0.15, 1.0), seed=13)
    assert set(choice.components) == set(choice.settings) == {INTRA, INTER}
    def accuracy(comp, level):
        feats, gold = lab_dev[level]
        return float(np.mean(comp.classifier.predict(comp.transform(feats)) == np.asarray(gold)))

    for level in (INTRA, INTER):
        by_c = {c: accuracy(fit_component(*lab_train[level], C=c, seed=13, multiclass=True), level) for c in (0.15, 1.0)}
        assert choice.settings[level]["dev_accuracy"] == max(by_c.values()) == by_c[choice.settings[level]["C"]]
        assert accuracy(choice.components[level], level) == by_c[choice.settings[level]["C"]]


def test_select_structure_then_bias_then_size_prior_score_the_model_on_dev(tiny_splits):
    train_docs, dev_docs = tiny_splits
    segmenter = select_segmenter(train_docs, dev_docs, cs=(1.0,), seed=13)
    labeller = select_labeller(label_examples(train_docs), label_examples(dev_docs), cs=(1.0,), seed=13)
    c, model = select_structure(train_docs, dev_docs, segmenter, labeller, cs=(1.0,), seed=13)
    assert c == 1.0 and set(model.structure) == {INTRA, INTER}
    assert model.segmenter is segmenter.component and model.labeller == labeller.components
    penalties = (0.0, 0.5)
    spans = {}
    for pen in penalties:
        model.size_penalty = pen
        spans[pen] = evaluate(model, dev_docs)["span_f1"]
    assert spans[select_size_penalty(model, dev_docs, penalties)] == max(spans.values())
    assert select_default_bias(model, dev_docs, (1.0,)) == 1.0
    scores = score_on_dev(model, dev_docs)
    assert set(scores) == {"dev", "dev_gold_edus"} and scores["dev_gold_edus"]["seg_f1"] == 1.0
