"""The cue lexicon: shipped file, persistence, predictions, and the GUM builder."""

from __future__ import annotations

import pytest

from parsers.cue_lexicon import DEFAULT_LEXICON_PATH, CueLexicon, UnitView, join_features
from parsers.errors import InputError


def unit(words: str, dep: str = "ROOT", sent: int = 0) -> UnitView:
    return UnitView(words=tuple(words.lower().split()), head_dep=dep, sent=sent)


def test_shipped_lexicon_loads_and_is_small():
    lex = CueLexicon.from_disk()
    assert DEFAULT_LEXICON_PATH.stat().st_size < 1_000_000
    assert set(lex.labels) == {"s", "d"}
    assert "GUM" in lex.meta["source"]


def test_features_mark_level_and_cues():
    same = join_features([unit("I checked the plugs")], [unit("but it still fails", "conj")])
    assert "s|R1=but" in same and "s|Rdep=conj" in same and "s|R2=but it" in same
    cross = join_features([unit("I checked the plugs")], [unit("However it fails", sent=1)])
    assert all(f.startswith("d|") for f in cross)


def test_predictions_follow_gum_statistics():
    lex = CueLexicon.from_disk()
    rel, _ = lex.predict(join_features([unit("it stalls")], [unit("because the pump failed", "advcl")]), "s")
    assert rel in {"Cause", "Explanation"}
    rel, nuc = lex.predict(join_features([unit("if it rains", "advcl")], [unit("stay home")]), "s")
    assert rel == "Condition" and nuc == "SN"
    rel, _ = lex.predict(join_features([unit("it stalls")], [unit("to save fuel", "advcl")]), "s")
    assert rel == "Enablement"


def test_round_trip_and_errors(tmp_path):
    lex = CueLexicon(features={"s|R1=but": {"Contrast|NN": 3}}, labels={"s": {"Contrast|NN": 3}}, meta={"x": 1})
    path = tmp_path / "lex.json"
    lex.to_disk(path)
    back = CueLexicon.from_disk(path)
    assert back.to_dict() == lex.to_dict()
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="malformed"):
        CueLexicon.from_disk(path)
    with pytest.raises(InputError, match="not found"):
        CueLexicon.from_disk(tmp_path / "missing.json")
    with pytest.raises(InputError):
        CueLexicon.from_dict({"labels": {}})


def test_prior_weight_trades_the_label_prior_against_cues(tmp_path):
    # A cue seen mostly with a rare label: at weight 1 the cue wins, a heavy prior keeps the frequent label.
    data = {"features": {"s|R1=so": {"Cause|NS": 4, "Elaboration|NS": 1}},
            "labels": {"s": {"Cause|NS": 10, "Elaboration|NS": 90}}}
    light = CueLexicon.from_dict({**data, "prior_weight": 1.0})
    heavy = CueLexicon.from_dict({**data, "prior_weight": 4.0})
    assert light.predict(["s|R1=so"], "s") == ("Cause", "NS")
    assert heavy.predict(["s|R1=so"], "s") == ("Elaboration", "NS")
    path = tmp_path / "lex.json"
    heavy.to_disk(path)
    assert CueLexicon.from_disk(path).prior_weight == 4.0
    assert CueLexicon.from_dict(data).prior_weight == 2.0  # older files without the key get the tuned default


def test_unknown_level_falls_back_to_default():
    assert CueLexicon().predict([], "s") == ("Elaboration", "NS")


@pytest.mark.gum
def test_builder_counts_gold_joins(gum_dir, tmp_path):
    from parsers.build_lexicon import main

    out = tmp_path / "lex.json"
    assert main(["--gum", str(gum_dir), "--limit", "2", "--min-count", "1", "--out", str(out)]) == 0
    lex = CueLexicon.from_disk(out)
    assert lex.meta["documents"] == 2
    total = sum(sum(v.values()) for v in lex.labels.values())
    assert total > 50
    # Every join counts one Rdep feature.
    rdep = sum(sum(v.values()) for k, v in lex.features.items() if "|Rdep=" in k)
    assert rdep == total
