"""The benchmark's questions: judged candidates, loaded from a self-contained file or from the shipped judgments.

A self-contained file (``--data FILE``) has one JSON object per line::

    {"id": "...", "question": "...", "tried": ["replaced the battery"],
     "candidates": [{"id": "...", "text": "...", "gold": false, "relevant": true, "repeats_tried": false, "why": ""}]}

The shipped judgments (``judgments.jsonl`` beside this module) hold the same labels but only ids, since the texts are
licensed data that stays in the shared data folder: ``mechanics:<question id>`` and ``reddit:<subreddit>:<post id>``
questions, candidates by pool id (a mechanics accepted answer or a built-in corpus answer).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eval.datasets import PoolAnswer, default_data_dir, load_builtin, load_mechanics, reddit_questions
from eval.jsonl import read_objects
from parsers.errors import InputError

JUDGMENTS_PATH = Path(__file__).resolve().parent / "judgments.jsonl"
#: the built-in dialogues the pool held when the candidates were judged (the corpus has grown since)
POOL_BUILTIN_PATH = Path(__file__).resolve().parent / "pool_builtin_dialogues.txt"
SECOND_JUDGE_PATH = Path(__file__).resolve().parent / "judgments_second.jsonl"
MAX_CANDIDATES = 10


@dataclass(frozen=True)
class Candidate:
    """One judged candidate answer of a question."""

    id: str
    text: str
    relevant: bool
    repeats_tried: bool
    gold: bool = False
    why: str = ""

    @property
    def relevant_and_new(self) -> bool:
        return self.relevant and not self.repeats_tried


@dataclass(frozen=True)
class TriedQuestion:
    """A question that states what was already tried, its tried actions in the judge's words, its candidates."""

    id: str
    question: str
    tried: tuple[str, ...]
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True)
class GoldSet:
    """The benchmark's questions and the pool their candidates come from (the methods index the whole pool)."""

    name: str
    questions: tuple[TriedQuestion, ...]
    pool: tuple[PoolAnswer, ...]
    judged: int  # questions judged, including those that state nothing tried


def load_gold_file(path: str | Path) -> GoldSet:
    """Return the questions of a self-contained JSONL file; the pool is the union of its candidates."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"--data {path}: no such file")
    rows = read_objects(path)
    questions = [_question(row, f"{path}:{n}", text_of=None) for n, row in rows]
    kept = tuple(q for q in questions if q is not None)
    if not kept:
        raise InputError(f"{path}: no question with a non-empty 'tried' list and judged candidates")
    pool = {c.id: PoolAnswer(id=c.id, text=c.text, dialogue_id=f"file-{i}", position=1)
            for i, c in enumerate(c for q in kept for c in q.candidates)}
    return GoldSet(name=path.stem, questions=kept, pool=tuple(pool.values()), judged=len(rows))


def load_shipped(data_dir: Path | str | None = None, path: Path = JUDGMENTS_PATH) -> GoldSet:
    """Return the shipped judgments with their texts read from the shared data; ``DatasetUnavailable`` without it."""
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    mechanics = load_mechanics(data_dir)
    pool = (*mechanics.pool, *judged_builtin_pool())
    texts = {a.id: a.text for a in pool}
    questions = {f"mechanics:{d.id}": d.question for d in mechanics.dialogues}
    accepted = {f"mechanics:{d.id}": d.answer_ids[0] for d in mechanics.dialogues}
    questions.update(reddit_questions(data_dir))
    rows = read_objects(path)

    def text_of(kind: str, item_id: str) -> str:
        found = (questions if kind == "question" else texts).get(item_id)
        if found is None:
            raise InputError(f"{path.name}: {kind} {item_id!r} is not in the shared data at {data_dir}")
        return found

    kept = tuple(q for q in (_question(row, f"{path.name}:{n}", text_of=text_of, gold_id=accepted.get(row.get("id")))
                             for n, row in rows) if q is not None)
    return GoldSet(name="mechanics+reddit", questions=kept, pool=pool, judged=len(rows))


def judged_builtin_pool() -> tuple[PoolAnswer, ...]:
    """Return the built-in answers of the pool as it was judged: the dialogues ``POOL_BUILTIN_PATH`` lists."""
    keep = set(POOL_BUILTIN_PATH.read_text(encoding="utf-8").split())
    return tuple(a for a in load_builtin().pool if a.dialogue_id in keep)


def _question(row: dict, where: str, *, text_of, gold_id: str | None = None) -> TriedQuestion | None:
    """Return the question of ``row``, or None when it states nothing tried (judged, but not in the benchmark)."""
    tried = row.get("tried")
    if not isinstance(tried, list) or not all(isinstance(t, str) for t in tried):
        raise InputError(f"{where}: 'tried' must be a list of strings")
    if row.get("states_tried") is False or not tried:
        return None
    qid = _string(row, "id", where)
    question = text_of("question", qid) if text_of else _string(row, "question", where)
    raw = row.get("candidates")
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{where}: 'candidates' must be a non-empty list")
    if len(raw) > MAX_CANDIDATES:
        raise InputError(f"{where}: {len(raw)} candidates, at most {MAX_CANDIDATES}")
    candidates = tuple(_candidate(c, f"{where} candidate {i + 1}", text_of, gold_id) for i, c in enumerate(raw))
    if len({c.id for c in candidates}) != len(candidates):
        raise InputError(f"{where}: candidate ids repeat")
    return TriedQuestion(id=qid, question=question, tried=tuple(tried), candidates=candidates)


def _candidate(raw: object, where: str, text_of, gold_id: str | None) -> Candidate:
    if not isinstance(raw, dict):
        raise InputError(f"{where}: must be a JSON object")
    cid = _string(raw, "id", where)
    for name in ("relevant", "repeats_tried"):
        if not isinstance(raw.get(name), bool):
            raise InputError(f"{where}: '{name}' must be true or false")
    return Candidate(id=cid, text=text_of("answer", cid) if text_of else _string(raw, "text", where),
                     relevant=raw["relevant"], repeats_tried=raw["repeats_tried"],
                     gold=bool(raw.get("gold", False)) or cid == gold_id,
                     why=str(raw.get("why") or ""))


def _string(row: dict, name: str, where: str) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: '{name}' must be a non-empty string")
    return value
