"""The project's own model weights in the repository stay within the 30 MB the parser issue set for them all."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Every folder the repository keeps model weights in (parsers, the learned ranker and its calibrators).
MODEL_FOLDERS = ("parsers/models", "dtdialog/ranking/models")
BUDGET_BYTES = 30_000_000
WEIGHT_SUFFIXES = {".onnx", ".npz", ".npy", ".joblib", ".pkl", ".safetensors", ".bin", ".pt"}


def test_model_weights_in_the_repository_total_at_most_30_mb():
    files = [p for folder in MODEL_FOLDERS for p in (ROOT / folder).rglob("*") if p.suffix in WEIGHT_SUFFIXES]
    assert any(p.suffix == ".npz" for p in files)  # the walk found the weights it is meant to count
    total = sum(p.stat().st_size for p in files)
    assert total <= BUDGET_BYTES, sorted(((p.stat().st_size, str(p.relative_to(ROOT))) for p in files), reverse=True)


def test_no_whole_encoder_file_is_kept():
    """The int8 MiniLM is assembled at first use (parsers/minilm_file.py); a 33 MB copy must not creep back in."""
    assert not [p for p in (ROOT / "parsers/models").glob("*.onnx") if p.stat().st_size > 5_000_000]
