"""The neural parser's heads on tiny synthetic inputs: numpy inference equals the torch modules it was trained
as, trees are binary and cover every EDU once, splits respect sentences, weights round-trip through disk."""

from __future__ import annotations

import numpy as np
import pytest

from parsers.errors import ConfigError, ModelNotAvailableError
from parsers.neural.encoder import FEATURE_DIM, nearest_window, window_bounds
from parsers.neural.model import (
    N_WORD_FLAGS,
    WEIGHTS_FILE,
    NeuralModel,
    edu_raw,
    pair_inputs,
    sentence_chunks,
    shape_features,
    split_candidates,
)
from parsers.relations import RELATIONS

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'dtdialog[dense]')")

from parsers.neural.training import NeuralSettings, build_modules, export_params  # noqa: E402

LABELS = ["Elaboration|NS", "Joint|NN", "Contrast|NN", "Attribution|SN", "Cause|NS"]
SMALL = NeuralSettings(seg_proj=8, seg_hidden=8, edu_dim=8, hidden=8)


@pytest.fixture(scope="module")
def modules():
    torch.manual_seed(3)
    seg, tree = build_modules(SMALL, len(LABELS))
    seg.eval()
    tree.eval()
    return seg, tree


@pytest.fixture(scope="module")
def model(modules):
    return NeuralModel(params=export_params(*modules), labels=LABELS, seg_threshold=0.5)


def _words(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, FEATURE_DIM)).astype(np.float32)


def test_window_bounds_cover_every_subword_and_respect_the_limit():
    assert window_bounds(10, 254) == [(0, 10)]
    bounds = window_bounds(1000, 254)
    assert all(b - a == 254 for a, b in bounds) and bounds[0][0] == 0 and bounds[-1][1] == 1000
    owner = nearest_window(1000, bounds)
    for p, w in enumerate(owner):
        a, b = bounds[w]
        assert a <= p < b
    # A subword in the overlap takes the window it is more central in.
    assert owner[200] == 1 and owner[10] == 0


@pytest.mark.parametrize("chunks", [None, [(0, 5), (5, 17), (17, 23)]])
def test_numpy_segmenter_equals_torch(modules, model, chunks):
    seg, _ = modules
    words = _words(23)
    flags = (np.random.default_rng(1).random((23, N_WORD_FLAGS)) > 0.8).astype(np.float32)
    with torch.no_grad():
        expected = torch.sigmoid(seg(torch.as_tensor(words), torch.as_tensor(flags), chunks)).numpy()
    got = model.seg_probs(words, flags, chunks)
    assert got.shape == (23,)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_sentence_chunks_keep_sentences_whole():
    from parsers.nlp_base import Token

    sents = [3, 5, 2, 9, 1]
    toks = [Token(i=i, text="w", idx=2 * i, lemma="w", pos="X", tag="X", dep="dep", head=i, sent=s)
            for i, s in enumerate(s for s, n in enumerate(sents) for _ in range(n))]
    chunks = sentence_chunks(toks, limit=8)
    assert chunks[0][0] == 0 and chunks[-1][1] == len(toks)
    assert all(a2 == b1 for (_, b1), (a2, _) in zip(chunks, chunks[1:]))
    for a, b in chunks:
        assert a == 0 or toks[a - 1].sent != toks[a].sent  # starts a sentence
        assert b - a <= 8 or len({t.sent for t in toks[a:b]}) == 1
    assert chunks == [(0, 8), (8, 10), (10, 19), (19, 20)]


def test_numpy_split_scores_equal_torch(modules, model):
    _, tree = modules
    raw = edu_raw(_words(30), [(0, 4), (4, 9), (9, 15), (15, 22), (22, 30)])
    H = model.edu_vectors(raw)
    with torch.no_grad():
        local = torch.tanh(tree.edu_proj(torch.as_tensor(raw)))
        H_torch = torch.cat([local, tree.edu_rnn(local.unsqueeze(0))[0][0]], dim=1).numpy()
    assert H.shape == (5, 2 * SMALL.edu_dim)
    np.testing.assert_allclose(H, H_torch, rtol=1e-4, atol=1e-5)
    sent = np.array([0, 0, 1, 1, 1])
    i, k, j = np.array([0, 0, 1, 2]), np.array([0, 1, 2, 3]), np.array([4, 4, 3, 4])
    shape = shape_features(i, k, j, sent, 5)
    csum = np.vstack([np.zeros((1, H.shape[1]), dtype=np.float32), np.cumsum(H, axis=0)])
    x = pair_inputs(H, csum, i, k, j, shape)
    with torch.no_grad():
        Ht = torch.as_tensor(H_torch)
        xt = tree.pair(Ht, torch.cat([torch.zeros(1, Ht.shape[1]), torch.cumsum(Ht, 0)]), *(
            torch.as_tensor(a) for a in (i, k, j)), torch.as_tensor(shape))
        for name in ("split", "label"):
            np.testing.assert_allclose(model._mlp(name, x), tree.mlp(name, xt).numpy(), rtol=1e-4, atol=1e-4)


def _check_tree(root, n: int):
    leaves = [node.edu for node in root.walk() if node.is_leaf]
    assert leaves == list(range(n))  # every EDU exactly once, in order
    for node in root.walk():
        if not node.is_leaf:
            assert len(node.children) == 2 and node.relation in RELATIONS
            assert "".join(node.nuclearity) in ("NS", "SN", "NN")


@pytest.mark.parametrize("n", [2, 3, 7, 12])
def test_build_gives_a_binary_tree_over_every_edu(model, n):
    bounds = [(3 * k, 3 * k + 3) for k in range(n)]
    sent = np.array([k // 3 for k in range(n)])
    root = model.build(edu_raw(_words(3 * n, seed=n), bounds), sent)
    _check_tree(root, n)


def test_spans_over_several_sentences_split_only_between_sentences(model):
    sent = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    assert split_candidates(0, 7, sent).tolist() == [2, 4]
    assert split_candidates(0, 2, sent).tolist() == [0, 1]
    H = model.edu_vectors(edu_raw(_words(16, 5), [(2 * k, 2 * k + 2) for k in range(8)]))
    for i, k, j in model.splits(H, sent):
        if sent[i] != sent[j]:
            assert sent[k] != sent[k + 1]
    # Sentence first: every sentence is a constituent.
    spans = {(i, j) for i, _, j in model.splits(H, sent)}
    assert {(0, 2), (3, 4), (5, 7)} <= spans


def test_labels_come_from_the_label_set(model):
    H = model.edu_vectors(edu_raw(_words(12, 7), [(0, 3), (3, 6), (6, 9), (9, 12)]))
    sent = np.zeros(4, dtype=np.int64)
    splits = model.splits(H, sent)
    labels = model.label(H, sent, splits)
    assert len(labels) == len(splits) == 3
    assert all(f"{r}|{n}" in LABELS for r, n in labels)


def test_to_disk_from_disk_round_trip_gives_identical_trees(model, tmp_path):
    model.to_disk(tmp_path / "m", manifest={"name": "m", "version": "test"})
    loaded = NeuralModel.from_disk(tmp_path / "m")
    assert loaded.labels == model.labels and loaded.seg_threshold == model.seg_threshold
    assert loaded.manifest["version"] == "test"
    raw = edu_raw(_words(40, 9), [(4 * k, 4 * k + 4) for k in range(10)])
    sent = np.array([0, 0, 1, 1, 1, 2, 3, 3, 3, 3])
    assert loaded.build(raw, sent) == model.build(raw, sent)
    with np.load(tmp_path / "m" / WEIGHTS_FILE, allow_pickle=False) as data:  # no pickle needed to read it
        assert "seg_proj.weight" in data.files


def test_from_disk_errors_are_one_line(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="no neural parser model"):
        NeuralModel.from_disk(tmp_path)
    (tmp_path / WEIGHTS_FILE).write_bytes(b"not a zip")
    with pytest.raises(ModelNotAvailableError, match="cannot load neural parser model"):
        NeuralModel.from_disk(tmp_path)


def test_settings_are_validated():
    with pytest.raises(ConfigError, match="seg_epochs"):
        NeuralSettings(seg_epochs=0)
    with pytest.raises(ConfigError, match="dropout"):
        NeuralSettings(dropout=1.5)
