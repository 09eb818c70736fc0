"""The evaluations that build an engine take its options from ``add_engine_arguments``, the definition ``dtdialog
chat`` uses: the same names, choices and one-line refusals."""

from __future__ import annotations

import argparse
import importlib

import pytest

from dtdialog.cli import build_parser
from dtdialog.setup.engine_args import POOL_ENGINE_OPTIONS, add_engine_arguments

#: every evaluation that builds an engine, and how to get its argument parser without running it
EVALS = ("eval.reconstruct", "eval.selective", "eval.dialogue.cli", "eval.position", "eval.coverage.cli")


class _Stop(Exception):
    pass


def _parser_of(module: str) -> argparse.ArgumentParser:
    """Return the parser ``module.main`` builds, caught as it starts parsing."""
    caught = {}
    original = argparse.ArgumentParser.parse_args

    def catch(self, args=None, namespace=None):
        caught["parser"] = self
        raise _Stop

    argparse.ArgumentParser.parse_args = catch
    try:
        with pytest.raises(_Stop):
            importlib.import_module(module).main([])
    finally:
        argparse.ArgumentParser.parse_args = original
    return caught["parser"]


def _action(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    return parser._option_string_actions[flag]


def _chat_parser() -> argparse.ArgumentParser:
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices["chat"]


@pytest.mark.parametrize("module", EVALS)
def test_every_engine_evaluation_declares_ranker_and_parser_as_chat_does(module):
    parser, chat = _parser_of(module), _chat_parser()
    for flag in ("--ranker", "--parser"):
        ours, theirs = _action(parser, flag), _action(chat, flag)
        assert (ours.dest, ours.choices, ours.default, ours.help) == (theirs.dest, theirs.choices, theirs.default,
                                                                      theirs.help)


@pytest.mark.parametrize("module", EVALS)
def test_an_unknown_ranker_is_the_same_refusal_as_in_chat(module, capsys):
    with pytest.raises(SystemExit) as chat_exit:
        build_parser().parse_args(["chat", "--ranker", "bogus"])
    chat_error = capsys.readouterr().err.strip().splitlines()[-1]
    with pytest.raises(SystemExit) as eval_exit:
        _parser_of(module).parse_args(["--ranker", "bogus"])
    eval_error = capsys.readouterr().err.strip().splitlines()[-1]
    assert chat_exit.value.code == eval_exit.value.code == 2
    assert eval_error.split("error: ", 1)[1] == chat_error.split("error: ", 1)[1]
    assert "invalid choice: 'bogus'" in eval_error


@pytest.mark.parametrize("module", ["eval.reconstruct", "eval.selective", "eval.dialogue.cli", "eval.position"])
def test_a_pool_evaluation_takes_only_the_engine_options_it_can_use(module):
    parser = _parser_of(module)
    args = parser.parse_args(["--parser", "rules", "--ranker", "learned", "--data", "f.jsonl", "--format", "jsonl"])
    assert (args.parser, args.ranker, args.format) == ("rules", "learned", "jsonl")
    for flag in ("--corpus", "--index", "--engine", "--corpus-format", "--no-dt"):
        assert flag not in parser._option_string_actions  # it indexes the evaluated pool itself


def test_coverage_names_the_corpus_format_apart_from_the_question_file_format():
    args = _parser_of("eval.coverage.cli").parse_args(["--data", "q.txt", "--format", "jsonl", "--corpus", "c.csv",
                                                       "--corpus-format", "csv"])
    assert (args.format, args.corpus_format) == ("jsonl", "csv")
    chat = build_parser().parse_args(["chat", "--corpus", "c.csv", "--corpus-format", "csv"])
    assert chat.corpus_format == "csv"  # the same name works in chat, beside its --format
    assert build_parser().parse_args(["chat", "--corpus", "c.csv", "--format", "csv"]).corpus_format == "csv"


def test_coverage_refuses_a_question_format_without_a_question_file(capsys):
    from eval.coverage import cli

    assert cli.main(["--format", "csv"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--corpus-format" in err[0]


def test_coverage_reads_a_question_file_in_the_format_given(tmp_path):
    from eval.coverage.questions import file_questions
    from parsers.errors import InputError

    path = tmp_path / "questions.txt"
    path.write_text('{"id": "q1", "text": "my brakes squeal"}\n', encoding="utf-8")
    assert [q.text for q in file_questions(path)] == ['{"id": "q1", "text": "my brakes squeal"}']
    assert [(q.id, q.text) for q in file_questions(path, "jsonl")] == [("q1", "my brakes squeal")]
    with pytest.raises(InputError, match="jsonl, csv, text"):
        file_questions(path, "irc")


def test_only_a_known_engine_option_can_be_asked_for():
    with pytest.raises(ValueError, match="no engine option bogus"):
        add_engine_arguments(argparse.ArgumentParser(), only=("ranker", "bogus"))
    parser = argparse.ArgumentParser()
    add_engine_arguments(parser, only=POOL_ENGINE_OPTIONS)
    assert {a.dest for a in parser._actions} == {"help", "parser", "ranker"}


def test_reconstruct_passes_the_engine_options_to_the_methods_that_take_them():
    from eval.reconstruct import method_options

    args = argparse.Namespace(parser="rules", ranker="learned")
    assert method_options("dtq", args) == {"parser": "rules", "ranker": "learned"}
    assert method_options("dtq-rules", args) == {"parser": "rules"}  # its name fixes the ranker
    assert method_options("keyword", args) == {}
    assert method_options("dtq", argparse.Namespace(parser=None, ranker=None)) == {}
