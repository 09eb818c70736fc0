"""Evaluation sets for dialogue reconstruction: test dialogues (Q, A1, C1, A2, C2, A3) and a candidate pool.

A dialogue of the corpus becomes an ``EvalDialogue`` by grouping its turns into alternating
customer blocks (the question Q and follow-ups C) and agent blocks (answers A): consecutive turns
of one side are one utterance of the dialogue, so an IRC helper's three short lines in a row are
one answer. Every answer block of the corpus is a ``PoolAnswer`` candidate; a test dialogue keeps
at most its first three answers and the follow-ups between them.

Datasets (the files are read from the shared data directory, never copied):
  * ``mechanics``: Motor Vehicle Stack Exchange Q/A, query = title + body, 497 single-step dialogues,
    candidates = all 497 accepted answers of the same file;
  * ``twitter``: real customer-care conversations (IBM twitter customer care, dev file);
  * ``irc``: Ubuntu IRC support threads, the dev split is the test set, train answers are extra candidates;
  * ``builtin``: the project's own car-repair corpus (own data, written for the project).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from data.model import ANSWER, Dialogue
from parsers.errors import InputError

MAX_ANSWERS = 3
DATA_DIR_ENV = "DTDIALOG_SHARED_DATA"
REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class PoolAnswer:
    """A candidate answer utterance; ``id`` is ``"{dialogue id}#{turn position}"`` of its first turn."""

    id: str
    text: str
    dialogue_id: str
    position: int


@dataclass(frozen=True)
class EvalDialogue:
    """A test dialogue: the question, the actual answer ids (at most 3) and the follow-ups C1, C2, ...

    ``followups[i]`` is the customer's turn after answer ``i + 1``; it exists only when the
    dialogue continued, so ``len(followups) <= len(answer_ids)``.
    """

    id: str
    question: str
    answer_ids: tuple[str, ...]
    followups: tuple[str, ...] = ()
    #: the question's title when the record has one (mechanics): what a chat user types first
    title: str = field(default="", compare=False)

    @property
    def n_answers(self) -> int:
        return len(self.answer_ids)

    def opening_and_body(self) -> tuple[str, str]:
        """Return ``(first chat message, the rest of the question)``: the title and the body when there is a title."""
        first, _, rest = self.question.partition("\n")
        if self.title and first.rstrip(".") == self.title.strip().rstrip("."):
            return first, rest.strip()
        return self.question, ""


@dataclass(frozen=True)
class EvalSet:
    """Test dialogues plus the candidate pool they are reconstructed from."""

    name: str
    dialogues: tuple[EvalDialogue, ...]
    pool: tuple[PoolAnswer, ...]
    description: str = ""
    own_data: bool = False
    meta: dict = field(default_factory=dict, compare=False)

    def limited(self, limit: int | None) -> EvalSet:
        """Return the set with only its first ``limit`` test dialogues (the pool is kept whole)."""
        if limit is None or limit >= len(self.dialogues):
            return self
        if limit < 1:
            raise InputError(f"--limit must be at least 1, got {limit}")
        return replace(self, dialogues=self.dialogues[:limit])

    def pool_by_id(self) -> dict[str, PoolAnswer]:
        return {a.id: a for a in self.pool}


def split_dialogue(dialogue: Dialogue, *, max_answers: int = MAX_ANSWERS) -> tuple[EvalDialogue | None, list[PoolAnswer]]:
    """Return (test dialogue or None, every answer block of ``dialogue`` as a candidate).

    The test dialogue is None when the dialogue has no customer question before its first answer
    or no answer at all; its answers still go to the pool.
    """
    blocks: list[tuple[bool, int, list[str]]] = []  # (is_answer, first turn position, texts)
    for pos, turn in enumerate(dialogue.turns):
        is_answer = turn.role == ANSWER
        text = turn.text.strip()
        if not text:
            continue
        if blocks and blocks[-1][0] == is_answer:
            blocks[-1][2].append(text)
        else:
            blocks.append((is_answer, pos, [text]))
    pool = [PoolAnswer(id=dialogue.answer_id(pos), text="\n".join(texts), dialogue_id=dialogue.id, position=pos)
            for is_answer, pos, texts in blocks if is_answer]
    if not blocks or blocks[0][0] or not pool:
        return None, pool
    question = "\n".join(blocks[0][2])
    answer_ids: list[str] = []
    followups: list[str] = []
    for is_answer, pos, texts in blocks[1:]:
        if is_answer:
            if len(answer_ids) == max_answers:
                break
            answer_ids.append(dialogue.answer_id(pos))
        elif len(followups) < len(answer_ids):
            followups.append("\n".join(texts))
    return EvalDialogue(id=dialogue.id, question=question, answer_ids=tuple(answer_ids),
                        followups=tuple(followups), title=str(dialogue.meta.get("title") or "")), pool


def build_eval_set(name: str, test: Sequence[Dialogue], *, extra_candidates: Sequence[Dialogue] = (),
                   description: str = "", own_data: bool = False) -> EvalSet:
    """Return the evaluation set of ``test`` dialogues, candidates = their answers plus ``extra_candidates``'."""
    dialogues: list[EvalDialogue] = []
    pool: dict[str, PoolAnswer] = {}
    for d in test:
        ed, answers = split_dialogue(d)
        if ed is not None:
            dialogues.append(ed)
        pool.update((a.id, a) for a in answers)
    for d in extra_candidates:
        pool.update((a.id, a) for a in split_dialogue(d)[1])
    if not dialogues:
        raise InputError(f"dataset {name!r} has no dialogue with a question followed by an answer")
    return EvalSet(name=name, dialogues=tuple(dialogues), pool=tuple(pool.values()), description=description,
                   own_data=own_data)


# --- where the data lives -------------------------------------------------------------------------------

def default_data_dir() -> Path:
    """Return ``$DTDIALOG_SHARED_DATA`` if set, else ``../shared/data`` next to the repository."""
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env) if env else (REPO_ROOT.parent / "shared" / "data")


class DatasetUnavailable(InputError):
    """The files of a dataset are not there; callers skip the dataset with this message."""


def _require(path: Path) -> Path:
    if not path.is_file():
        raise DatasetUnavailable(f"{path} not found (set --data-dir or ${DATA_DIR_ENV})")
    return path


def _load(path: Path, fmt: str) -> list[Dialogue]:
    from data.loaders import load_corpus  # the project's loaders own the file formats

    return list(load_corpus(path, fmt=fmt))


def load_mechanics(data_dir: Path) -> EvalSet:
    path = _require(data_dir / "mechanics_qa" / "mechanics_qa_dev.jsonl")
    return build_eval_set("mechanics", _load(path, "mechanics"), description=(
        "Motor Vehicle Maintenance & Repair Stack Exchange, 497 real single-step car-repair Q/A "
        "(query = title + body, candidates = all accepted answers of the file)"))


def load_twitter(data_dir: Path) -> EvalSet:
    path = _require(data_dir / "support_dialogues" / "twitter_customer_care_dev.json")
    return build_eval_set("twitter", _load(path, "twitter"), description=(
        "IBM Twitter customer care dev file: real customer <-> agent conversations, 25 companies"))


def load_irc(data_dir: Path) -> EvalSet:
    path = _require(data_dir / "support_dialogues" / "ubuntu_irc_threads_train_dev.jsonl")
    dialogues = _load(path, "irc")
    test = [d for d in dialogues if _split_of(d) == "dev"]
    train = [d for d in dialogues if _split_of(d) != "dev"]
    return build_eval_set("irc", test, extra_candidates=train, description=(
        "Ubuntu IRC technical-support threads (Kummerfeld et al.): dev split = test dialogues, "
        "train answers = extra candidates"))


def load_irc_train(data_dir: Path) -> EvalSet:
    """Return the IRC *train* split as an evaluation-shaped set: its dialogues, and only its own answers as pool.

    Training data for the learned ranker (issue 8 allows the IRC train split); it shares no
    dialogue, and no candidate, with the ``irc`` test set (the dev split).
    """
    path = _require(data_dir / "support_dialogues" / "ubuntu_irc_threads_train_dev.jsonl")
    train = [d for d in _load(path, "irc") if _split_of(d) != "dev"]
    return build_eval_set("irc-train", train, description="Ubuntu IRC train split (ranker training data)")


def _split_of(dialogue: Dialogue) -> str:
    split = dialogue.meta.get("split")
    if split:
        return str(split)
    return dialogue.id.split("/", 1)[0] if "/" in dialogue.id else "train"


def load_builtin(data_dir: Path | None = None) -> EvalSet:
    from data.builtin import load_builtin_corpus

    return build_eval_set("builtin", load_builtin_corpus(), own_data=True, description=(
        "the project's own built-in car-repair corpus (written for dtdialog, not independent real data)"))


#: The formats of a team's own dialogue file (``--data FILE --format F``): every format the loaders read.
FILE_FORMATS = ("csv", "jsonl", "twitter", "irc", "mechanics")


def load_file_set(path: str | Path, fmt: str | None) -> EvalSet:
    """Return the evaluation set of one dialogue file: its dialogues are both the questions and the pool.

    Raises ``InputError`` without a known ``fmt`` and for a missing or unreadable file (never a skip: the file was
    named, so its absence is a mistake to report).
    """
    if fmt not in FILE_FORMATS:
        raise InputError(f"--data needs --format, one of {', '.join(FILE_FORMATS)}")
    from data.loaders import load_corpus

    path = Path(path)
    if not path.exists():
        raise InputError(f"data file {path} not found")
    # a team's logs are real data, not text written for the project: no "own data" label
    return build_eval_set(path.stem, load_corpus(path, fmt=fmt), description=f"{path} ({fmt})")


#: the shared Reddit car posts: subreddit -> file under ``car_texts/``
REDDIT_FILES = {"MechanicAdvice": "reddit_mechanicadvice_top.csv", "Cartalk": "reddit_cartalk_top.csv"}


def reddit_questions(data_dir: Path) -> dict[str, str]:
    """Return ``reddit:<subreddit>:<id>`` -> title and text of the shared Reddit car posts."""
    out: dict[str, str] = {}
    for sub, name in REDDIT_FILES.items():
        path = _require(data_dir / "car_texts" / name)
        csv.field_size_limit(1 << 24)
        with path.open(encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                text = f"{row.get('title', '').strip()}\n{row.get('selftext', '').strip()}".strip()
                out[f"reddit:{sub}:{row.get('id', '')}"] = text  # as stored, like the mechanics questions
    return out


DATASETS: dict[str, Callable[[Path], EvalSet]] = {
    "mechanics": load_mechanics,
    "twitter": load_twitter,
    "irc": load_irc,
    "builtin": load_builtin,
}


def load_eval_set(name: str, *, data_dir: Path | str | None = None) -> EvalSet:
    """Return the evaluation set ``name``; raises ``DatasetUnavailable`` when its file is absent.

    Raises ``InputError`` for an unknown name.
    """
    if name not in DATASETS:
        raise InputError(f"unknown dataset {name!r}; choose from {', '.join(DATASETS)} or all")
    return DATASETS[name](Path(data_dir) if data_dir is not None else default_data_dir())
