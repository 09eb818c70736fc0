"""A loaded SG phrase file is checked entry by entry (``_check``) so answers decode without checks in a turn."""

from __future__ import annotations

import json

import pytest

from index.sg_store import SGPhraseStore, _check, _decode, _decode_keys, _encode
from parsers.errors import InputError
from parsers.phrase_chunks import PhraseChunk

CHUNKS = (PhraseChunk(kind="NP", lemmas=("the", "fuel", "pump"), pos=("DET", "NOUN", "NOUN")),
          PhraseChunk(kind="VP", lemmas=("replace", "it"), pos=("VERB", "PRON")))


def _file(entries: list[str]) -> dict:
    return SGPhraseStore(ids=[f"a{i}" for i in range(len(entries))], encoded=entries).to_dict()


def test_what_encode_writes_passes_the_check_and_decodes_alike_either_way():
    raw = _encode(CHUNKS)
    _check(raw)
    assert _decode(raw) == CHUNKS
    assert _decode_keys(raw) == tuple((p.kind, p.lemmas, p.pos) for p in CHUNKS)
    store = SGPhraseStore.from_dict(_file([raw, _encode(())]))
    assert store.phrases("a0") == CHUNKS and store.phrases("a1") == ()
    assert store.phrase_keys("a0") == _decode_keys(raw)


@pytest.mark.parametrize("entry", [
    [["NP", [1], ["NUM"]]],  # a lemma that is not a string: _decode would have made it "1"
    [["NP", ["fuel"], [None]]],
    [["NP", "fuel", ["NOUN"]]],  # lemmas as one string
    [["NP", ["fuel", "pump"], ["NOUN"]]],  # fewer POS than lemmas
    [[7, ["fuel"], ["NOUN"]]],
    [["NP", ["fuel"], ["NOUN"], "extra"]],
    {"NP": ["fuel"]},
])
def test_a_loaded_entry_not_as_encode_writes_it_is_refused_at_load(entry):
    with pytest.raises(ValueError):
        _check(json.dumps(entry))
    with pytest.raises(InputError, match="malformed SG phrase file"):
        SGPhraseStore.from_dict(_file([_encode(CHUNKS), json.dumps(entry)]))
