"""The data options every dialogue evaluation shares, the pool it states, and the provenance its report records."""

from __future__ import annotations

import argparse
import json

import pytest

from eval.data_args import add_data_arguments, load_data_file, load_dataset


def _thread(tid: str, split: str, n: int = 1) -> dict:
    turns = [{"speaker": "asker1", "role": "asker", "text": f"how do I mount drive {tid}?"}]
    for i in range(n):
        turns.append({"speaker": "helper1", "role": "helper", "text": f"use mount {tid} option {i}"})
    return {"id": f"{split}/{tid}", "split": split, "turns": turns}


def _write(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.fixture
def irc_data(tmp_path):
    """A shared-data folder whose IRC dataset has 2 held-out threads and 6 train threads, plus a file of its tests."""
    folder = tmp_path / "shared" / "support_dialogues"
    folder.mkdir(parents=True)
    held_out = [_thread("a", "dev"), _thread("b", "dev")]
    _write(folder / "ubuntu_irc_threads_train_dev.jsonl", held_out + [_thread(f"t{i}", "train") for i in range(6)])
    test_file = tmp_path / "irc_test.jsonl"
    _write(test_file, held_out)
    return tmp_path / "shared", test_file


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_data_arguments(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize("module", ["eval.reconstruct", "eval.selective", "eval.dialogue.cli"])
def test_every_dialogue_evaluation_takes_data_format_and_pool(module, tmp_path):
    import importlib

    parser = argparse.ArgumentParser()
    importlib.import_module(module).add_arguments(parser)
    args = parser.parse_args(["--data", str(tmp_path / "f.jsonl"), "--format", "irc", "--pool", "dataset"])
    assert (args.data.name, args.format, args.pool) == ("f.jsonl", "irc", "dataset")


@pytest.mark.parametrize("module", ["eval.position", "eval.presupposition"])
def test_position_and_presupposition_take_a_file_and_a_pool(module, tmp_path, capsys):
    import importlib

    main = importlib.import_module(module).main
    # parsed, then refused for the missing file in one line (not an argparse usage error)
    assert main(["--data", str(tmp_path / "absent.jsonl"), "--format", "jsonl", "--pool", "file"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "absent.jsonl" in err[0]


def test_out_of_scope_takes_a_dialogue_file_with_its_format(tmp_path, irc_data):
    from eval.out_of_scope import add_arguments, real_texts

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    _, test_file = irc_data
    args = parser.parse_args(["--data", str(test_file), "--format", "irc"])
    texts = real_texts(tmp_path / "no-shared-data", args.data, args.format)
    assert [t for _, t, _ in texts] == ["how do I mount drive a?", "how do I mount drive b?"]
    assert parser.parse_args(["--data", "q.txt"]).format is None  # a plain question file, as before


def test_a_file_of_a_known_dataset_warns_that_its_pool_is_smaller(irc_data, capsys):
    data_dir, test_file = irc_data
    own = load_data_file(_args(["--data", str(test_file), "--format", "irc", "--data-dir", str(data_dir)]))
    assert len(own.pool) == 2 and own.meta["pool"]["kind"] == "file"
    warning = capsys.readouterr().err.strip().splitlines()
    assert warning == ["warning: the answer pool is the file's 2 answers, not the irc dataset's 8 "
                       "(give --pool dataset for those)"]
    whole = load_data_file(_args(["--data", str(test_file), "--format", "irc", "--data-dir", str(data_dir),
                                  "--pool", "dataset"]))
    assert len(whole.pool) == 8 and whole.meta["pool"] == {"kind": "dataset", "source": "irc"}
    assert capsys.readouterr().err == ""


def test_dataset_pool_file_keeps_only_the_test_dialogues_answers(irc_data):
    data_dir, _ = irc_data
    full = load_dataset("irc", _args(["--data-dir", str(data_dir)]))
    own = load_dataset("irc", _args(["--data-dir", str(data_dir), "--pool", "file"]))
    assert (len(full.pool), len(own.pool)) == (8, 2)
    assert (full.meta["pool"]["kind"], own.meta["pool"]["kind"]) == ("dataset", "file")


def test_the_irc_loader_takes_test_as_the_held_out_split(tmp_path, irc_data):
    from data.loaders import load_corpus
    from parsers.errors import InputError

    path = tmp_path / "t.jsonl"
    _write(path, [_thread("x", "test"), _thread("y", "train")])
    assert [d.meta["split"] for d in load_corpus(path, fmt="irc")] == ["dev", "train"]
    _write(path, [_thread("z", "validation")])
    with pytest.raises(InputError, match="split 'validation'"):
        load_corpus(path, fmt="irc")


def test_provenance_records_data_pool_parser_encoder_ranker_and_commit(irc_data, monkeypatch):
    from eval.provenance import provenance, provenance_lines

    monkeypatch.delenv("DTDIALOG_RANKER", raising=False)
    data_dir, test_file = irc_data
    own = load_data_file(_args(["--data", str(test_file), "--format", "irc", "--data-dir", str(data_dir)]))
    prov = provenance([own], parser="rules", ranker="learned")
    assert prov["data"] == [{"name": "irc_test", "data": str(test_file), "dialogues": 2,
                             "pool": {"kind": "file", "source": str(test_file), "size": 2}}]
    assert prov["parser"] == "rules" and prov["encoder_runtime"].startswith("onnx/")
    assert prov["ranker"]["name"] == "learned" and prov["ranker"]["version"] == "ranker-v1"
    assert prov["commit"] and " " not in prov["commit"]
    header = provenance_lines(prov)
    assert "pool: file, 2 answers" in header[0] and f"commit {prov['commit']}" in header[-1]
