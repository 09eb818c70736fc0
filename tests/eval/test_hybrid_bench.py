"""The latency bench's corpus: distinct real answers first, replicas only to fill up, stable cache keys."""

from __future__ import annotations

import pytest

from eval.datasets import DatasetUnavailable, default_data_dir, load_eval_set
from eval.hybrid_bench import assemble_corpus, replicated_corpus
from parsers.errors import InputError


def _normal(text: str) -> str:
    return " ".join(text.split()).lower()


def test_without_shared_data_builtin_answers_then_replicas(tmp_path):
    builtin = load_eval_set("builtin").pool
    corpus = assemble_corpus(answers=len(builtin) + 30, data_dir=tmp_path)  # an empty data directory
    assert set(corpus.missing) == {"mechanics", "twitter", "irc"}
    assert all("not found" in why for why in corpus.missing.values())
    assert corpus.sources == {"builtin": corpus.distinct}
    assert len(corpus.answers) == len(builtin) + 30 and corpus.replicas == len(builtin) + 30 - corpus.distinct
    assert len({a.id for a in corpus.answers}) == len(corpus.answers)  # unique ids, replicas included
    replicas = corpus.answers[corpus.distinct:]
    assert all(a.text.endswith("[copy 1]") and "~r1" in a.id for a in replicas)
    # built-in ids are kept: the timed dialogues' logged successors must be found by id
    assert {a.id for a in builtin} >= {a.id for a in corpus.answers[:corpus.distinct]}


def test_small_sizes_truncate_and_need_no_replica(tmp_path):
    corpus = assemble_corpus(answers=5, data_dir=tmp_path)
    assert len(corpus.answers) == 5 and corpus.distinct == 5 and corpus.replicas == 0
    assert len({_normal(a.text) for a in corpus.answers}) == 5
    with pytest.raises(InputError, match="at least 1"):
        assemble_corpus(answers=0, data_dir=tmp_path)


def test_digest_follows_the_content(tmp_path):
    a = assemble_corpus(answers=20, data_dir=tmp_path)
    assert a.digest() == assemble_corpus(answers=20, data_dir=tmp_path).digest()
    assert a.digest() != assemble_corpus(answers=21, data_dir=tmp_path).digest()


def test_replicated_mode_is_the_old_bench():
    corpus = replicated_corpus(answers=600)
    assert corpus.sources == {"builtin": corpus.distinct} and len(corpus.answers) == 600


@pytest.mark.shared_data
def test_shared_pools_give_distinct_prefixed_answers():
    try:
        mechanics = load_eval_set("mechanics").pool
    except DatasetUnavailable as exc:
        pytest.skip(f"shared data absent: {exc}")
    builtin = len(load_eval_set("builtin").pool)
    corpus = assemble_corpus(answers=builtin + 100, data_dir=default_data_dir())
    assert corpus.replicas == 0 and corpus.sources["mechanics"] == corpus.distinct - corpus.sources["builtin"]
    texts = [_normal(a.text) for a in corpus.answers]
    assert len(set(texts)) == len(texts)
    shared = corpus.answers[corpus.sources["builtin"]:]
    assert all(a.id.startswith("mechanics/") and a.dialogue_id.startswith("mechanics/") for a in shared)
    assert {a.id.split("/", 1)[1] for a in shared} <= {a.id for a in mechanics}


def test_rule_scorer_bench_builds_the_index_only(tmp_path):
    """``eval.turn_bench --corpus distinct`` reuses this cache without vectors or SG phrases (no [dense] needed)."""
    from eval.hybrid_bench import cached_index, replicated_corpus
    from index.dense_store import DenseStore
    from index.sg_store import SGPhraseStore
    from index.sqlite_index import SqliteIndex

    path, manifest = cached_index(replicated_corpus(answers=12), cache=tmp_path, progress=False, dense=False)
    with SqliteIndex(path) as index:
        assert index.count() == 12 == manifest["indexed"]
    assert not DenseStore.exists(path) and not SGPhraseStore.exists(path)


def test_stage_split_adds_up_to_the_turns_and_counts_the_parse_inside_the_gate_once():
    from eval.hybrid_bench import _stage_split
    from eval.latency import TimedCall

    stages = {name: TimedCall(print) for name in
              ("generation", "signals", "sg", "model", "parser", "scope", "scope_parse")}
    seconds = {"generation": 0.010, "signals": 0.012, "sg": 0.008, "model": 0.001, "parser": 0.009,
               "scope": 0.011, "scope_parse": 0.007}  # 7 ms of the gate's 11 were the question's parse
    for name, value in seconds.items():
        stages[name].seconds = value
    split = _stage_split(stages, total_ms=45.0)
    assert abs(sum(split.values()) - 45.0) < 1e-9
    assert abs(split["scope gate (question encoding, beside its parse)"] - 4.0) < 1e-9
    assert abs(split["RST parser (question, follow-ups)"] - 9.0) < 1e-9
    assert abs(split["signals without SG"] - 4.0) < 1e-9
