"""How often the car bot answers what it should not: ``python -m eval.out_of_scope [--data-dir DIR]``.

Issue 13, item 3. The out-of-scope gate (``dtdialog.understanding.scope``) of the built-in engine is run over:

* an **out-of-scope set** of text that is not car repair: Twitter customer-care openings, the Fidelity FAQ
  questions, GUM sentences (all from ``--data-dir``), plus generated keyboard mash, greetings and small talk,
  and non-English sentences written for this evaluation (seeded);
* the **built-in corpus's own opening questions** (as indexed, and leave-one-dialogue-out: the question's
  own dialogue removed from the domain profile, i.e. an unseen question of the same kind);
* **real car questions**: the Stack Exchange mechanics questions as a chat user would send them (title + body)
  and by their title alone, r/MechanicAdvice and r/CarTalk posts (title + selftext; all of them, and those that
  ask something, ``asks_for_help``), and any ``--data FILE`` of questions. One refused as off-topic is wrong; one
  met with the detail question (``vague``) is counted apart.

The engine is the default one (the learned ranker), so the gate reads the dense signal too: each message's
largest MiniLM cosine to a stored answer (leave-one-dialogue-out for the built-in openings).

Each set is split in halves with a seeded coin. The gate's settings (``EngineConfig.scope.scope_quantile``,
``scope_mass``, ``scope_dense_floor``, ``scope_dense_sure``) are fitted on the fit halves - the fewest real
car questions refused (the mean over the real sets), subject to >= 95% of the built-in openings answered
leave-one-out and <= ``FIT_OOS`` of the out-of-scope messages answered (a wrong answer is worse than a
refusal) - and every rate is reported on the other halves, for the fitted and the default settings.
Writes ``out_of_scope.json`` and ``out_of_scope.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import html
import json
import random
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from eval.datasets import FILE_FORMATS, default_data_dir
from eval.entry import one_line_errors
from eval.provenance import provenance, provenance_lines
from parsers.files import atomic_write_text, check_out_dir

VAGUE = "vague"  # dtdialog.understanding.scope.VAGUE, without importing the engine for a --help

DEFAULT_OUT = Path("runs") / "eval" / "out_of_scope"
QUANTILES = (0.0, 0.01, 0.03, 0.05, 0.1, 0.15, 0.2)
MASSES = (None, 10.0, 15.0, 20.0, 30.0, 40.0)
#: (floor, sure) pairs of the dense rule; (None, None): the vocabulary alone
DENSE_RULES = ((None, None), *((f, s) for f in (0.16, 0.18, 0.20, 0.22, 0.24, 0.26, 0.28, 0.30)
                                for s in (0.26, 0.28, 0.30, 0.32, 0.34, 0.36, 0.38, 0.40) if s >= f))
#: the dialogue manager's reply kinds that put stored answers in front of the user: an answer, or options to pick
BOT_ANSWERS = ("answer", "clarify")
TARGET_BUILTIN = 0.95
#: the out-of-scope answer rate the fit allows on its half: the 1% target less a margin for the held-out half
FIT_OOS = 0.005
#: the targets: out-of-scope messages answered, real car questions refused as off-topic
TARGET_OOS = 0.01
TARGET_REFUSED = 0.02
#: a post asks something: a question mark, or a plea for help or a diagnosis
_ASKS = re.compile(r"\?|\b(?:help|advice|any ideas|ideas\?|suggestions|anyone know|does anyone|what should|should i|"
                   r"how (?:do|can|to|would)|what (?:is|could|would|does|causes)|is (?:it|this) (?:safe|normal|ok|bad)|"
                   r"wondering|diagnos\w*|thoughts)\b", re.IGNORECASE)
GUM_SENTENCES = 400

#: Non-English sentences written for this evaluation (several languages, car and non-car topics).
NON_ENGLISH = (
    "Mein Auto springt nicht an, was kann ich tun?", "Die Bremsen quietschen, wenn ich anhalte.",
    "Wie viel kostet ein neuer Auspuff?", "Ich habe die Batterie gewechselt, aber der Motor startet immer noch nicht.",
    "Mi coche hace un ruido extraño al frenar.", "¿Por qué se enciende la luz del motor?",
    "El aire acondicionado no enfría nada.", "¿Dónde puedo cambiar el aceite de mi coche?",
    "Ma voiture ne démarre plus depuis hier matin.", "Le voyant moteur s'allume quand il fait froid.",
    "Combien coûte le remplacement des plaquettes de frein ?", "J'ai un bruit bizarre quand je tourne le volant.",
    "La mia macchina perde olio dal motore.", "Perché la batteria si scarica ogni notte?",
    "Il freno a mano non funziona più.", "O meu carro não liga de manhã.", "Por que o motor esquenta tanto no trânsito?",
    "Mijn auto maakt een piepend geluid bij het remmen.", "Waarom gaat het motorlampje branden?",
    "Min bil startar inte när det är kallt.", "Samochód nie chce odpalić po deszczu.",
    "Моя машина не заводится утром.", "Почему горит лампочка двигателя?", "Сколько стоит замена тормозных колодок?",
    "我的车启动不了，怎么办？", "刹车的时候有很大的噪音。", "发动机故障灯亮了是什么意思？",
    "車のエンジンがかかりません。", "ブレーキを踏むとキーキー音がします。", "제 차가 아침에 시동이 안 걸려요.",
    "브레이크에서 소리가 나요.", "Arabam sabahları çalışmıyor.", "Araba fren yaparken ses çıkarıyor.",
    "سيارتي لا تعمل في الصباح", "המכונית שלי לא מתניעה", "मेरी कार स्टार्ट नहीं हो रही है।",
    "Το αυτοκίνητό μου δεν παίρνει μπροστά.", "Autoni ei käynnisty aamuisin.", "Bilen min starter ikke om morgenen.",
    "Xe của tôi không nổ máy vào buổi sáng.",
)
GREETINGS = ("hello?", "hi there", "hi", "hey", "hello", "good morning", "how are you", "how are you doing today?",
             "thanks", "thank you!", "who are you", "what can you do?", "are you a bot?", "is anyone there?",
             "hey, how's it going", "hello, anyone there?", "yo", "good evening!", "nice to meet you", "testing")
_KEYS = "qwertyuiopasdfghjklzxcvbnm"


@dataclass(frozen=True)
class Rule:
    """The gate's domain decision: the vocabulary's threshold and mass, and the dense floor and sure cosines."""

    threshold: float
    mass: float | None = None
    dense_floor: float | None = None
    dense_sure: float | None = None


@dataclass
class Scored:
    """One message: its set, the gate's reason with the domain check off, its domain score, mass and cosine."""

    source: str
    text: str
    reason: str | None
    score: float
    mass: float = 0.0
    #: for a real car post: whether it asks something (``asks_for_help``)
    asks: bool = True
    #: the dialogue manager's reply kind to the message with the domain check open (None: not run)
    reply: str | None = None
    own_score: float | None = None
    own_mass: float | None = None
    dense: float | None = None
    own_dense: float | None = None

    def answered(self, rule: Rule, *, own: bool = False) -> bool:
        """Return whether the gate lets the message through under ``rule`` (``own``: leave-one-dialogue-out)."""
        own = own and self.own_score is not None
        score, evidence = (self.own_score, self.own_mass) if own else (self.score, self.mass)
        dense = self.own_dense if own and self.own_dense is not None else self.dense
        if self.reason is not None:
            return False
        lexical = score >= rule.threshold or (rule.mass is not None and evidence >= rule.mass)
        if rule.dense_floor is None or rule.dense_sure is None or dense is None:
            return lexical
        return dense >= rule.dense_sure or (lexical and dense >= rule.dense_floor)

    def bot_answers(self, rule: Rule) -> bool:
        """Return whether the bot puts stored answers in front of the user: past the gate, and not abstaining."""
        return self.answered(rule) and (self.reply is None or self.reply in BOT_ANSWERS)

    def refused(self, rule: Rule) -> bool:
        """Return whether a real question is refused as off-topic (the detail question for a vague one is not)."""
        return self.reason != VAGUE and not self.answered(rule)


def gibberish(rng: random.Random, n: int) -> list[str]:
    """Return ``n`` seeded keyboard mashes: key-row runs, random letters, letters with digits and symbols."""
    out = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            row = rng.choice(("qwertyuiop", "asdfghjkl", "zxcvbnm"))
            start = rng.randrange(0, len(row) - 4)
            out.append(row[start:start + rng.randint(4, len(row) - start)] * rng.randint(1, 2))
        elif kind == 1:
            out.append(" ".join("".join(rng.choice(_KEYS) for _ in range(rng.randint(3, 9)))
                                for _ in range(rng.randint(1, 4))))
        else:
            out.append("".join(rng.choice(_KEYS + "0123456789!?#") for _ in range(rng.randint(5, 16))))
    return out


def gum_sentences(directory: Path, rng: random.Random, n: int) -> list[str]:
    """Return ``n`` seeded GUM sentences: the .rs4 segments joined up to sentence-final punctuation."""
    sentences: list[str] = []
    for path in sorted(directory.glob("*.rs4")):
        current: list[str] = []
        for seg in re.findall(r"<segment[^>]*>(.*?)</segment>", path.read_text(encoding="utf-8"), flags=re.S):
            current.append(html.unescape(seg).strip())
            if re.search(r"[.?!]['\"]?$", current[-1]):
                sentence = " ".join(current)
                current = []
                if len(sentence.split()) >= 5:
                    sentences.append(sentence)
    rng.shuffle(sentences)
    return sentences[:n]


def _csv_rows(path: Path) -> list[dict[str, str]]:
    csv.field_size_limit(10**8)
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        return list(csv.DictReader(handle))


def out_of_scope_texts(data_dir: Path, rng: random.Random) -> list[tuple[str, str]]:
    """Return ``(source, text)`` of the out-of-scope set."""
    from data.loaders import load_corpus

    texts = [("twitter", d.question) for d in load_corpus(
        data_dir / "support_dialogues" / "twitter_customer_care_dev.json", fmt="twitter", on_error="skip")]
    texts += [("fidelity_faq", r["QUESTION"]) for r in _csv_rows(data_dir / "faq" / "fidelity_faq_answer_anatomy.csv")
              if r.get("QUESTION", "").strip()]
    texts += [("gum", s) for s in gum_sentences(data_dir / "gum_rst" / "rstweb", rng, GUM_SENTENCES)]
    texts += [("gibberish", s) for s in gibberish(rng, 120)]
    texts += [("greeting", s) for s in GREETINGS]
    texts += [("non_english", s) for s in NON_ENGLISH]
    return texts


def asks_for_help(text: str) -> bool:
    """Return whether a post asks something (a question mark, a plea for help or a diagnosis), not a story or a photo."""
    return bool(_ASKS.search(text))


def reddit_texts(data_dir: Path) -> list[tuple[str, str, bool]]:
    """Return ``(source, title + selftext, asks)`` of the real car posts."""
    out = []
    for path in sorted((data_dir / "car_texts").glob("reddit_*_top.csv")):
        for row in _csv_rows(path):
            text = " ".join(f"{row.get('title', '')} {row.get('selftext', '')}".split())[:4000]
            if text:
                out.append((path.stem, text, asks_for_help(text)))
    return out


def question_texts(path: Path, name: str) -> list[tuple[str, str, bool]]:
    """Return ``(source, text, True)`` of a question file: JSON lines or CSV with ``title`` (+ ``body`` or
    ``selftext``: two sets, ``NAME_full`` and ``NAME_title``), ``question`` or ``text`` fields, or plain lines."""
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    elif path.suffix == ".csv":
        rows = _csv_rows(path)
    else:
        rows = [{"text": line} for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out: list[tuple[str, str, bool]] = []
    for row in rows:
        title = html.unescape(str(row.get("title") or "")).strip()  # what a chat user types: no HTML entities
        body = html.unescape(str(row.get("body") or row.get("selftext") or "")).strip()
        if title:
            out.append((f"{name}_full", " ".join(f"{title} {body}".split())[:4000], True))
            out.append((f"{name}_title", title, True))
        elif str(row.get("question") or row.get("text") or "").strip():
            out.append((name, html.unescape(str(row.get("question") or row.get("text"))).strip()[:4000], True))
    return out


def dialogue_questions(path: Path, fmt: str) -> list[tuple[str, str, bool]]:
    """Return ``(source, text, True)`` of each opening question of a dialogue file in format ``fmt``."""
    from eval.datasets import load_file_set

    return [(path.stem, d.question[:4000], True) for d in load_file_set(path, fmt).dialogues]


def real_texts(data_dir: Path, files: list[Path], fmt: str | None = None) -> list[tuple[str, str, bool]]:
    """Return ``(source, text, asks)`` of every real car question: the mechanics questions, the Reddit posts, ``files``
    (dialogue files in format ``fmt`` when given, else question files)."""
    mechanics = data_dir / "mechanics_qa" / "mechanics_qa_dev.jsonl"
    out = question_texts(mechanics, "mechanics") if mechanics.is_file() else []
    out += [("reddit", text, asks) for _, text, asks in reddit_texts(data_dir)]
    for path in files:
        out += dialogue_questions(path, fmt) if fmt else question_texts(path, path.stem)
    return out


def score_all(gate, texts, nearest=None) -> list[Scored]:
    """Return the gate's verdict on each ``(source, text[, asks])`` with the domain check off, its domain score and,
    with ``nearest`` (``text -> largest cosine to a stored answer``), its cosine."""
    out = []
    for source, text, *asks in texts:
        verdict = gate.check(text)
        out.append(Scored(source, text, verdict.reason, float(verdict.signals.get("domain_score", 0.0)),
                          float(verdict.signals.get("domain_mass", 0.0)), asks=bool(asks[0]) if asks else True,
                          dense=nearest(text) if nearest is not None and verdict.reason is None else None))
    return out


def split(items: list[Scored], rng: random.Random) -> tuple[list[Scored], list[Scored]]:
    """Return (fit, test): a seeded coin per item."""
    coins = [rng.random() < 0.5 for _ in items]
    return [x for x, c in zip(items, coins) if c], [x for x, c in zip(items, coins) if not c]


def _share(items: list[Scored], pred) -> float | None:
    return round(sum(1 for x in items if pred(x)) / len(items), 4) if items else None


def real_sets(real: list[Scored]) -> dict[str, list[Scored]]:
    """Return the real questions by set: each source, and the Reddit posts that ask something (``reddit_asks``)."""
    sets: dict[str, list[Scored]] = {}
    for x in real:
        sets.setdefault(x.source, []).append(x)
    if "reddit" in sets:
        sets["reddit_asks"] = [x for x in sets["reddit"] if x.asks]
    return sets


def rates(rule: Rule, oos: list[Scored], builtin: list[Scored], real: list[Scored]) -> dict:
    """Return the answer and refusal rates under ``rule``: per real set, refused as off-topic and met as vague."""
    by_source = {s: _share([x for x in oos if x.source == s], lambda x: x.answered(rule))
                 for s in sorted({x.source for x in oos})}
    sets = real_sets(real)
    return {"threshold": round(rule.threshold, 4), "mass": rule.mass, "dense_floor": rule.dense_floor,
            "dense_sure": rule.dense_sure, "oos_answered": _share(oos, lambda x: x.answered(rule)),
            "oos_bot_answered": _share(oos, lambda x: x.bot_answers(rule)),
            "oos_answered_by_source": by_source, "oos_vague": _share(oos, lambda x: x.reason == VAGUE),
            "builtin_answered": _share(builtin, lambda x: x.answered(rule)),
            "builtin_answered_leave_one_out": _share(builtin, lambda x: x.answered(rule, own=True)),
            "real_refused": {name: _share(items, lambda x: x.refused(rule)) for name, items in sets.items()},
            "real_vague": {name: _share(items, lambda x: x.reason == VAGUE) for name, items in sets.items()},
            "real_sizes": {name: len(items) for name, items in sets.items()},
            "mean_refused": _mean_refused(rule, sets)}


def _mean_refused(rule: Rule, sets: dict[str, list[Scored]]) -> float | None:
    """Return the mean refused-as-off-topic rate over the real sets (``reddit_asks`` is part of ``reddit``)."""
    values = [_share(items, lambda x: x.refused(rule)) for name, items in sets.items() if name != "reddit_asks"]
    values = [v for v in values if v is not None]
    return round(sum(values) / len(values), 4) if values else None


def fit(profile, oos: list[Scored], builtin: list[Scored], real: list[Scored], *,
        quantiles=QUANTILES, masses=MASSES) -> tuple[float, Rule, dict]:
    """Return ``(quantile, rule, rates)``: the fewest real car questions refused (the mean over the real sets) among
    the rules that answer >= 95% of the built-in openings leave-one-out (an unseen question of the index's own kind)
    and put stored answers before at most ``FIT_OOS`` of the out-of-scope messages (``Scored.bot_answers``: past
    the gate and not met by an abstention; a margin under the target, for the held-out half); when no rule meets
    both, the least out-of-scope answered + real questions refused among those that meet the first, else among all.
    Dense rules are tried only when messages carry a cosine."""
    dense_rules = DENSE_RULES if any(x.dense is not None for x in oos) else ((None, None),)
    best = None
    for q in quantiles:
        for mass in masses:
            for floor, sure in dense_rules:
                rule = Rule(profile.threshold(q), mass, floor, sure)
                r = rates(rule, oos, builtin, real)
                short = (r["builtin_answered_leave_one_out"] or 0.0) < TARGET_BUILTIN
                answered, refused = r["oos_bot_answered"] or 0.0, r["mean_refused"] or 0.0
                cost = (short, answered > FIT_OOS, refused if answered <= FIT_OOS else answered + refused)
                if best is None or cost < best[0]:
                    best = (cost, q, rule, r)
    if best is None:
        return 0.0, Rule(0.0), rates(Rule(0.0), oos, builtin, real)
    return best[1], best[2], best[3]


def builtin_openings(profile) -> list[tuple[str, float, float]]:
    """Return each built-in dialogue's opening question with its leave-one-dialogue-out domain score."""
    from data.builtin import load_builtin_corpus
    from dtdialog.understanding.scope import message_stems

    out = []
    for d in load_builtin_corpus():
        stems = frozenset(s for t in [d.question, *(turn.text for _, turn in d.answers())] for s in message_stems(t))
        score, detail = profile.score(d.question, leave_out=stems)
        out.append((d.question, score, detail["domain_mass"]))
    return out


def _nearest_cosine(engine):
    """Return ``(text, exclude_ids) -> largest cosine to a stored answer or a glossary entry``, as the engine's gate
    reads it, or None without dense signals."""
    from dtdialog.ranking.learned_scorer import LearnedScorer
    from dtdialog.runtime.paths import data_home
    from dtdialog.understanding.glossary_vectors import nearest_domain_cosine

    if not isinstance(engine.scorer, LearnedScorer) or engine.scorer.extractor.dense is None:
        return None
    return nearest_domain_cosine(engine.scorer.extractor.dense, engine.manager.scope.glossary, cache_dir=data_home())


def _score_sets(engine, data_dir: Path, *, seed: int, files: list[Path], fmt: str | None = None):
    """Return ``(profile, oos, builtin, real)``: every message scored with the domain check off."""
    from dtdialog.understanding.scope import ScopeGate

    # the domain check off (the rules are applied here), over the domain texts the engine's gate reads
    gate = ScopeGate(engine.index, threshold=0.0, glossary=engine.manager.scope.glossary)
    profile = gate.profile()
    nearest = _nearest_cosine(engine)
    oos = score_all(gate, out_of_scope_texts(data_dir, random.Random(seed)), nearest)
    openings = builtin_openings(profile)
    builtin = score_all(gate, [("builtin", q) for q, _, _ in openings], nearest)
    own_answers: dict[str, list[str]] = {}
    for doc_id in engine.index.ids():
        doc = engine.index.get(doc_id)
        if doc is not None:
            own_answers.setdefault(doc.meta.get("question", ""), []).append(doc_id)
    for item, (question, own, own_mass) in zip(builtin, openings):
        item.own_score, item.own_mass = own, own_mass
        if nearest is not None and item.reason is None:
            item.own_dense = nearest(question, tuple(own_answers.get(question, ())))
    return profile, oos, builtin, score_all(gate, real_texts(data_dir, files, fmt), nearest)


def split_real(items: list[Scored], rng: random.Random) -> tuple[list[Scored], list[Scored]]:
    """Return (fit, test) of the real questions: one coin per question, so its title and its title + body (the
    ``_title`` set follows its ``_full`` one in ``question_texts``) fall in the same half."""
    fit_half, test_half, coin = [], [], False
    for x in items:
        if not x.source.endswith("_title"):
            coin = rng.random() < 0.5
        (fit_half if coin else test_half).append(x)
    return fit_half, test_half


def _examples(items: list[Scored], rule: Rule) -> dict[str, list[str]]:
    """Return up to 12 refused questions per real set (the test half), with their reason and signals."""
    out: dict[str, list[str]] = {}
    for name, members in real_sets(items).items():
        out[name] = [f"[{x.reason or 'domain'} {x.score:.2f}/{x.mass:.1f}/{x.dense or 0:.2f}] {x.text[:120]}"
                     for x in members if x.refused(rule)][:12]
    return out


def end_to_end(manager, items: list[Scored]) -> None:
    """Set each message's ``reply``: the dialogue manager's reply kind with the gate lifted, one new session each
    (so any rule's end-to-end outcome is the gate's verdict, then this reply)."""
    gate, manager.scope = manager.scope, None
    try:
        for x in items:
            if x.reason is None:
                x.reply = manager.handle(session_id=manager.start_session(), text=x.text).kind
    finally:
        manager.scope = gate


def reply_shares(rule: Rule, items: list[Scored]) -> dict[str, float]:
    """Return the share of each reply the user gets under ``rule``: ``out_of_scope`` when the gate refuses."""
    kinds: dict[str, int] = {}
    for x in items:
        kind = (x.reply or "not run") if x.answered(rule) else "out_of_scope"
        kinds[kind] = kinds.get(kind, 0) + 1
    return {k: round(v / len(items), 4) for k, v in sorted(kinds.items())} if items else {}


def evaluate(data_dir: Path, *, seed: int = 13, progress: bool = True, files: list[Path] | None = None,
             fmt: str | None = None) -> dict:
    """Return the report: the fitted settings, the fit-half and test-half rates, and the setup."""
    import tempfile

    from dtdialog.setup.assembly import EngineSpec, build_engine
    from dtdialog.setup.engine_config import EngineConfig
    from dtdialog.understanding.scope import LANGUAGE_ID

    with tempfile.TemporaryDirectory() as home:
        engine = build_engine(EngineSpec(sessions_path=str(Path(home) / "sessions.sqlite")), progress=progress)
        try:
            profile, oos, builtin, real = _score_sets(engine, data_dir, seed=seed, files=list(files or ()), fmt=fmt)
            ranker = "learned" if _nearest_cosine(engine) is not None else "rules"
            end_to_end(engine.manager, oos)
        finally:
            engine.close()
    halves = [split(oos, random.Random(f"{seed}-oos")), split(builtin, random.Random(f"{seed}-builtin")),
              split_real(real, random.Random(f"{seed}-real"))]
    default = EngineConfig().scope
    # with an encoder only its cosines are fitted: the quantile and mass are the rule ranker's whole domain check
    lexical = {} if ranker == "rules" else {"quantiles": (default.scope_quantile,), "masses": (default.scope_mass,)}
    quantile, rule, fit_rates = fit(profile, *(h[0] for h in halves), **lexical)
    dense_on = ranker == "learned"
    default_rule = Rule(profile.threshold(default.scope_quantile), default.scope_mass,
                        default.scope_dense_floor if dense_on else None,
                        default.scope_dense_sure if dense_on else None)
    prov = {**provenance([], ranker=ranker), "data": [{"name": "out-of-scope sets", "data": str(data_dir),
                                                       "files": [str(f) for f in files or ()], "format": fmt,
                                                       "pool": {"kind": "builtin", "size": profile.n}}]}
    return {"provenance": prov, "seed": seed, "data_dir": str(data_dir), "files": [str(f) for f in files or ()],
            "index_dialogues": profile.n, "ranker": ranker, "language_id": LANGUAGE_ID.missing or "py3langid",
            "sizes": {"oos": len(oos), "builtin": len(builtin), **rates(rule, [], [], real)["real_sizes"]},
            "reddit_not_asking": sum(1 for x in real if x.source == "reddit" and not x.asks),
            "fitted_quantile": quantile, "fitted": asdict(rule), "fit": fit_rates,
            "test": rates(rule, *(h[1] for h in halves)),
            "default_quantile": default.scope_quantile, "default": asdict(default_rule),
            "default_test": rates(default_rule, *(h[1] for h in halves)),
            "default_all": rates(default_rule, oos, builtin, real), "oos_replies": reply_shares(default_rule, oos),
            "oos_replies_fitted": reply_shares(rule, oos),
            "oos_answered_examples": [f"[{x.source}] {x.text[:120]}" for x in halves[0][1]
                                      if x.answered(default_rule)][:15],
            "refused_examples": _examples(halves[2][1], default_rule)}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def markdown(report: dict) -> str:
    """Return the report as a short markdown page: the targets first, then the settings and examples."""
    sets = list(report["default_test"]["real_refused"])
    columns = [("out-of-scope past the gate", lambda r: _pct(r["oos_answered"])),
               ("out-of-scope answered by the bot (answer or options)", lambda r: _pct(r["oos_bot_answered"])),
               ("built-in answered (leave-one-out)", lambda r: _pct(r["builtin_answered_leave_one_out"]))]
    columns += [(f"{name} refused / vague", lambda r, n=name: f"{_pct(r['real_refused'][n])} / "
                 f"{_pct(r['real_vague'][n])}") for name in sets]

    def row(name: str, r: dict) -> str:
        return "| " + " | ".join([name, *(f(r) for _, f in columns)]) + " |"

    fitted = report["fitted"]
    lines = ["# Out-of-scope gate", "", *(provenance_lines(report["provenance"]) if "provenance" in report else []), "",
             f"Seed {report['seed']}; data {report['data_dir']} {' '.join(report['files'])}; index of "
             f"{report['index_dialogues']} dialogues; engine ranker {report['ranker']} (learned: the gate reads the "
             f"dense cosine too); language id: {report['language_id']}; sizes {report['sizes']}; Reddit posts that "
             f"ask nothing (stories, photos, tips): {report['reddit_not_asking']}.", "",
             f"Targets: out-of-scope answered <= {TARGET_OOS:.0%}; real car questions refused as off-topic <= "
             f"{TARGET_REFUSED:.0%} (vague: met with the detail question, not refused).", "",
             f"Fitted on the fit halves: `scope_dense_floor` = {fitted['dense_floor']}, `scope_dense_sure` = "
             f"{fitted['dense_sure']}, `scope_quantile` = {report['fitted_quantile']}, `scope_mass` = {fitted['mass']} "
             "(with an encoder only the cosines are fitted, at the default quantile and mass: those are the rule "
             "ranker's whole check; fewest real car questions refused, mean over the sets, "
             f"with >= {TARGET_BUILTIN:.0%} of the built-in openings answered leave-one-out and <= {FIT_OOS:.2%} of "
             "the out-of-scope messages answered by the bot).", "",
             "| rule, halves | " + " | ".join(c for c, _ in columns) + " |", "|---" * (len(columns) + 1) + "|",
             row("fitted, fit halves", report["fit"]), row("fitted, test halves", report["test"]),
             row(f"default (q={report['default_quantile']}), test halves", report["default_test"]),
             row("default, whole sets", report["default_all"]), "",
             "Out-of-scope messages end to end (the engine's dialogue manager, whole set), default settings: " + ", ".join(
                 f"{k} {v:.2%}" for k, v in report["oos_replies"].items()) + "; fitted settings: " + ", ".join(
                 f"{k} {v:.2%}" for k, v in report["oos_replies_fitted"].items()) + " (`answer`: the bot answered, "
             "`clarify`: it offered stored answers to pick from, `abstain`: it said it was not sure).", "",
             "Out-of-scope past the gate by source (test half, default settings): " + ", ".join(
                 f"{k} {v:.1%}" for k, v in report["default_test"]["oos_answered_by_source"].items() if v is not None),
             "", "## Out-of-scope messages past the gate (test half, default settings)", ""]
    lines += [f"- {x}" for x in report["oos_answered_examples"]] or ["- none"]
    for name, examples in report["refused_examples"].items():
        lines += ["", f"## {name}: refused as off-topic (test half, default settings; [reason score/mass/cosine])", ""]
        lines += [f"- {x}" for x in examples] or ["- none"]
    return "\n".join(lines) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None, help="shared data folder (default $DTDIALOG_SHARED_DATA)")
    parser.add_argument("--data", type=Path, action="append", default=[], metavar="FILE",
                        help="a file of real questions to count refusals on too: a dialogue file with --format (its "
                             "opening questions), else .jsonl/.csv with title [+ body] or question, or one per line; "
                             "repeatable")
    parser.add_argument("--format", default=None, help=f"format of the --data dialogue files: {', '.join(FILE_FORMATS)}")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    parser.add_argument("--seed", type=int, default=13, help="seed of the split and of the generated texts")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar while building the index")


def run(args: argparse.Namespace) -> int:
    data_dir = args.data_dir or default_data_dir()
    for part in ("support_dialogues/twitter_customer_care_dev.json", "faq", "gum_rst/rstweb", "car_texts"):
        if not (data_dir / part).exists():
            print(f"error: {data_dir / part} not found (give --data-dir)", file=sys.stderr)
            return 2
    for path in args.data:
        if not path.is_file():
            print(f"error: {path} not found (--data)", file=sys.stderr)
            return 2
    check_out_dir(args.out)  # before the slow part
    if args.format and not args.data:
        print("error: --format applies to --data FILE", file=sys.stderr)
        return 2
    for path in args.data if args.format else ():
        dialogue_questions(path, args.format)  # a bad format or file fails here, not after the engine is built
    report = evaluate(data_dir, seed=args.seed, progress=not args.no_progress, files=args.data, fmt=args.format)
    check_out_dir(args.out).mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "out_of_scope.json", json.dumps(report, indent=2, ensure_ascii=False))
    atomic_write_text(args.out / "out_of_scope.md", markdown(report))
    print(markdown(report))
    return 0


def main(argv: list[str] | None = None, *, prog: str = "python -m eval.out_of_scope", command: str | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error, 130: interrupted)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    return one_line_errors(lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
