"""The cue-aware tree heads: explicit connectives become inputs where they stand, a cue model round-trips through
disk, numpy equals torch, ``--resume`` continues the new head exactly, and a genre can be held out."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from parsers.errors import ConfigError
from parsers.neural.cues import cue_words, edu_cues, pair_cue_dim, pair_cues
from parsers.neural.encoder import FEATURE_DIM
from parsers.neural.model import NeuralModel, edu_raw
from parsers.nlp_base import Token

WORDS = ["although", "because", "but", "if"]


def _tokens(text: str) -> list[Token]:
    words = text.split()
    return [Token(i=i, text=w, idx=0, lemma=w.lower(), pos="PUNCT" if w in ",." else "X", tag="X", dep="dep",
                  head=i, sent=0, is_punct=w in ",.") for i, w in enumerate(words)]


def test_cue_words_reuse_the_connective_list_and_the_lexicon():
    from parsers.cue_lexicon import INTER_SENTENCE_MARKERS

    words = cue_words()
    assert set(INTER_SENTENCE_MARKERS) <= set(words)
    assert {"to", "by", "without"} <= set(words)  # strongly non-default openers of the shipped lexicon
    assert words == sorted(words)


def test_but_opening_the_right_span_sets_its_feature():
    toks = _tokens("I checked the plugs , but it still won't start .")
    bounds = [(0, 5), (5, 11)]
    cues = edu_cues(toks, bounds, WORDS)
    but = WORDS.index("but")
    assert cues[1, but] == 1 and cues[1].sum() == 1  # the right EDU opens with "but"
    assert cues[0].sum() == 0  # nothing in the left one
    x = pair_cues(cues, np.array([0]), np.array([0]), np.array([1]))
    assert x.shape == (1, pair_cue_dim(len(WORDS)))
    n = 2 * len(WORDS)
    # Blocks: first and last EDU of the left span, then of the right span; the right span's first EDU has it.
    assert x[0, 2 * n + but] == 1 and x[0, 3 * n + but] == 1 and x[0, :2 * n].sum() == 0


def test_but_elsewhere_sets_other_features_or_none():
    toks = _tokens("It failed and I do not know but . I checked it because")
    cues = edu_cues(toks, [(0, 9), (9, 13)], WORDS)
    n = len(WORDS)
    assert cues[0, :n].sum() == 0  # "but" inside the unit is no opening cue...
    assert cues[0, n + WORDS.index("but")] == 1  # ...only a closing one (punctuation skipped)
    assert cues[1, n + WORDS.index("because")] == 1 and cues[1, :n].sum() == 0
    second = edu_cues(_tokens("and if it rains"), [(0, 4)], WORDS)
    assert second[0, WORDS.index("if")] == 1  # the connective is often the second word


def test_train_refuses_an_unknown_genre_to_hold_out_in_one_line(tmp_path, capsys):
    from parsers.train import main

    (tmp_path / "splits.tsv").write_text("GUM_news_a\ttrain\nGUM_bio_b\tdev\nGUM_reddit_c\ttest\n")
    assert main(["--gum", str(tmp_path), "--out", str(tmp_path / "m"), "--hold-out-genre", "reddit"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: unknown GUM genre 'reddit' to hold out; known: bio, news"  # reddit is never read
    assert not (tmp_path / "m").exists()


torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'dtdialog[train]')")

from parsers.neural.training import (  # noqa: E402
    NeuralDoc,
    NeuralSettings,
    Stage,
    build_modules,
    export_params,
    run_stage,
    split_hold_out,
    tree_batch,
    tree_loss,
)

LABELS = ["Elaboration|NS", "Joint|NN", "Contrast|NN", "Concession|SN"]
BOTH = ("split", "label")
SMALL = NeuralSettings(seg_proj=8, seg_hidden=8, edu_dim=8, hidden=8, dropout=0.1, cue_heads=BOTH)


def _model(settings: NeuralSettings = SMALL, seed: int = 3) -> tuple[NeuralModel, object]:
    torch.manual_seed(seed)
    seg, tree = build_modules(settings, len(LABELS), len(WORDS))
    seg.eval()
    tree.eval()
    model = NeuralModel(params=export_params(seg, tree), labels=LABELS, cue_words=list(WORDS),
                        cue_heads=tuple(settings.cue_heads))
    return model, tree


def _doc(n: int, seed: int) -> NeuralDoc:
    rng = np.random.default_rng(seed)
    words = rng.normal(size=(3 * n, FEATURE_DIM)).astype(np.float32)
    cues = np.zeros((n, 2 * len(WORDS)), dtype=np.float32)
    cues[1::2, WORDS.index("but")] = 1
    nodes = [(0, 0, n - 1, "Concession|SN")] + [(k, k, n - 1, LABELS[k % 3]) for k in range(1, n - 1)]
    return NeuralDoc(prepared=None, words=words, flags=np.zeros((3 * n, 1), dtype=np.float32), chunks=[],
                     raw=edu_raw(words, [(3 * k, 3 * k + 3) for k in range(n)]), sent=np.zeros(n, dtype=np.int64),
                     nodes=nodes, cues=cues)


def test_cue_heads_numpy_equals_torch_and_reads_the_cues():
    model, tree = _model()
    doc = _doc(5, 1)
    H = model.edu_vectors(doc.raw)
    csum = np.vstack([np.zeros((1, H.shape[1]), dtype=np.float32), np.cumsum(H, axis=0)])
    i, k, j = np.array([0, 0, 1]), np.array([0, 1, 2]), np.array([4, 4, 3])
    with torch.no_grad():
        Ht = torch.as_tensor(H)
        ct = torch.cat([torch.zeros(1, Ht.shape[1]), torch.cumsum(Ht, 0)])
        from parsers.neural.model import shape_features

        shape = torch.as_tensor(shape_features(i, k, j, doc.sent, 5))
        for head in ("split", "label"):
            x = model._inputs(head, H, csum, i, k, j, doc.sent, doc.cues)
            xt = tree.inputs(head, Ht, ct, *(torch.as_tensor(a) for a in (i, k, j)), shape, torch.as_tensor(doc.cues))
            np.testing.assert_allclose(model._mlp(head, x), tree.mlp(head, xt).numpy(), rtol=1e-4, atol=1e-4)
            without = model._inputs(head, H, csum, i, k, j, doc.sent, np.zeros_like(doc.cues))
            assert not np.allclose(model._mlp(head, x), model._mlp(head, without))  # the cues move the scores
    with pytest.raises(ValueError, match="cue inputs"):
        model.label(H, doc.sent, [(0, 0, 4)])


def test_cue_model_round_trips_through_disk(tmp_path):
    model, _ = _model()
    model.to_disk(tmp_path / "m", manifest={"name": "m"})
    loaded = NeuralModel.from_disk(tmp_path / "m")
    assert loaded.cue_words == WORDS and loaded.cue_heads == BOTH
    doc = _doc(8, 4)
    assert loaded.build(doc.raw, doc.sent, doc.cues) == model.build(doc.raw, doc.sent, doc.cues)


def test_a_model_without_cues_still_loads(tmp_path):
    plain = NeuralSettings(seg_proj=8, seg_hidden=8, edu_dim=8, hidden=8, cue_heads=())
    torch.manual_seed(0)
    seg, tree = build_modules(plain, len(LABELS))
    NeuralModel(params=export_params(seg, tree), labels=LABELS).to_disk(tmp_path / "v2")
    loaded = NeuralModel.from_disk(tmp_path / "v2")
    assert loaded.cue_words == [] and loaded.cue_heads == ()
    doc = _doc(4, 2)
    assert loaded.build(doc.raw, doc.sent) is not None


def _stage(module, docs, epochs: int, checkpoint) -> Stage:
    index = {lab: c for c, lab in enumerate(LABELS)}
    items = [tree_batch(d, index) for d in docs]

    def score(params):
        return -float(np.abs(params["label_hidden.weight"]).sum()), {}

    return Stage("tree", module, items, tree_loss, score, epochs, checkpoint)


def test_resume_continues_the_cue_head_exactly(tmp_path):
    docs = [_doc(6, s) for s in range(3)]
    settings = NeuralSettings(seg_proj=8, seg_hidden=8, edu_dim=8, hidden=8, patience=10, cue_heads=BOTH)
    straight = _model(settings)[1]
    straight.train()
    run_stage(_stage(straight, docs, 2, tmp_path / "a.pt"), settings, resume=False)

    interrupted = _model(settings)[1]
    run_stage(_stage(interrupted, docs, 1, tmp_path / "b.pt"), settings, resume=False)
    resumed = _model(settings, seed=99)[1]  # fresh weights: everything must come from the checkpoint
    record = run_stage(_stage(resumed, docs, 2, tmp_path / "b.pt"), settings, resume=True)
    assert [h["epoch"] for h in record["history"]] == [1, 2]
    for name, value in straight.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[name]), name
    assert resumed.label_hidden.weight.shape[1] > 7 * 16 + 10  # the cue inputs are part of what was resumed


def test_resume_from_a_checkpoint_of_other_settings_is_one_line(tmp_path):
    docs = [_doc(5, 1)]
    settings = NeuralSettings(seg_proj=8, seg_hidden=8, edu_dim=8, hidden=8, cue_heads=BOTH)
    run_stage(_stage(_model(settings)[1], docs, 1, tmp_path / "t.pt"), settings, resume=False)
    plain = NeuralSettings(seg_proj=8, seg_hidden=8, edu_dim=8, hidden=8, cue_heads=())
    _, tree = build_modules(plain, len(LABELS))
    with pytest.raises(ConfigError, match="other settings"):
        run_stage(_stage(tree, docs, 2, tmp_path / "t.pt"), plain, resume=True)


def test_cue_heads_setting_is_validated():
    assert NeuralSettings().cue_heads == () and NeuralSettings().tree_dropout == 0.2  # the shipped v2's recipe
    with pytest.raises(ConfigError, match="cue heads"):
        NeuralSettings(cue_heads=("segmenter",))
    with pytest.raises(ConfigError, match="tree_dropout"):
        NeuralSettings(tree_dropout=1.0)


def _genre_doc(name: str) -> SimpleNamespace:
    return SimpleNamespace(prepared=SimpleNamespace(doc=SimpleNamespace(name=name, genre=name.split("_")[1])))


def test_hold_out_moves_a_genre_of_every_split_out_of_training():
    train = [_genre_doc("GUM_news_a"), _genre_doc("GUM_bio_b")]
    dev = [_genre_doc("GUM_news_c"), _genre_doc("GUM_vlog_d")]
    test = [_genre_doc("GUM_news_e"), _genre_doc("GUM_bio_f")]
    kept_train, kept_dev, held = split_hold_out(train, dev, test, "news")
    assert [d.prepared.doc.name for d in kept_train] == ["GUM_bio_b"]
    assert [d.prepared.doc.name for d in kept_dev] == ["GUM_vlog_d"]
    assert [d.prepared.doc.name for d in held] == ["GUM_news_a", "GUM_news_c", "GUM_news_e"]
    with pytest.raises(ConfigError, match="unknown GUM genre 'poetry'"):
        split_hold_out(train, dev, test, "poetry")
