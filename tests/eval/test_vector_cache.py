"""The cross-method embedding cache: texts seen before are never encoded again."""

from __future__ import annotations

import numpy as np

from eval.methods.vector_cache import encode_cached


class Recording:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts, *, progress: bool = False):
        self.seen.extend(texts)
        v = np.asarray([[len(t), t.count("e") + 1, 1.0] for t in texts], dtype=np.float32).reshape(len(texts), 3)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_only_new_texts_are_encoded_and_rows_follow_the_input(tmp_path):
    enc = Recording()
    path = tmp_path / "v.sqlite"
    first = encode_cached(["one", "three", "one"], encoder=enc, path=path)
    assert enc.seen == ["one", "three"] and first.shape == (3, 3)
    np.testing.assert_array_equal(first[0], first[2])
    enc.seen.clear()
    second = encode_cached(["three", "eleven", "one"], encoder=enc, path=path)
    assert enc.seen == ["eleven"]
    np.testing.assert_array_equal(second[0], first[1])
    np.testing.assert_array_equal(second[2], first[0])
    # another model never reads this model's vectors
    enc.seen.clear()
    encode_cached(["one"], encoder=enc, path=path, model="other-model")
    assert enc.seen == ["one"]
    assert encode_cached([], encoder=enc, path=path).shape[0] == 0
