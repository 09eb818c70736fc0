"""The project's vocabulary: what a word is, which words are stop words, and how words are stemmed.

Two jobs read words, and each has a named role here:

* **retrieval** (``index``: documents, queries, both backends) - ``words_of`` (Unicode letters and
  digits), ``RETRIEVAL_STOP_WORDS``, ``is_content_word`` / ``content_words``, ``search_tokens``; the
  index stems with its engine's own Porter stemmer (``FtsStemmer`` mirrors SQLite FTS5's, so query
  pruning and highlights see exactly the terms the index stored);
* **agreement** (``dtdialog.understanding.entities`` and the dialogue modules that compare entities) -
  ``entity_words`` (ASCII letters and digits), ``ENTITY_STOP_WORDS`` + ``LIGHT_VERBS``,
  ``is_entity_word``, and the NLTK Porter ``stem``.

Both stop lists are ``FUNCTION_WORDS`` plus what their role adds. The roles differ on purpose and
on record: the shipped learned ranker was fitted on features computed with exactly these rules, so
a change to any of them changes the figures and needs a refit.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable
from functools import lru_cache

#: a sentence break in customer or answer text: the space after a full stop, '!' or '?' (no abbreviation handling)
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")

#: English function words no role treats as a term: articles, pronouns, auxiliaries, prepositions,
#: conjunctions, negations, contraction pieces.
FUNCTION_WORDS: frozenset[str] = frozenset("""
'd 'll 're 's 've a about above after again against all also although am an and any are aren't as at be because
been before being below between both but by can can't cannot could couldn't d did didn't do does doesn't doing
don't down during each etc even few for from further had hadn't has hasn't have haven't having he her here hers
herself him himself his how however i i'm i've if in into is isn't it it's its itself just ll m maybe me more
most my myself n't no nor not now of off on once one only or other our ours ourselves out over own re really s
same she should shouldn't so some still such t than that that's the their theirs them themselves then there
there's these they this those though through to too under until up ve very was wasn't we were weren't what when
where which while who whom why will with won't would wouldn't yet you your yours yourself yourselves
""".split())

#: Retrieval also drops the remaining contractions, modals and discourse adverbs: they occur in most
#: answers, so as index keywords they only add postings that bm25 weighs at ~0.
RETRIEVAL_STOP_WORDS: frozenset[str] = FUNCTION_WORDS | frozenset("""
'm anyway get got he'd he'll he's hence here's how's i'd i'll let's like may might must mustn't near ones ought
quite shall shan't she'd she'll she's they'd they'll they're they've thus we'd we'll we're we've what's when's
where's who's why's you'd you'll you're you've
""".split())

#: Agreement drops more: a shared entity must name a thing the customer and the answer talk about, and
#: conversational fillers (``thanks``, ``okay``), vague nouns (``thing``, ``something``, ``way``) and
#: quantifiers (``many``, ``every``) are shared by unrelated turns. ``-pron-`` is spaCy 2's pronoun lemma.
ENTITY_STOP_WORDS: frozenset[str] = FUNCTION_WORDS | frozenset("""
-pron- already anymore anyone anything either else ever every everyone everything hello hi let lot lots many
much neither nothing ok okay please someone something thank thanks thing things two upon way whether
""".split())

#: Verbs too general to count as a shared entity on their own (agreement only: as index keywords they
#: still help, e.g. ``replace`` in "replace the belt").
LIGHT_VERBS: frozenset[str] = frozenset("""
be have do get make go take give put try want need know think say tell see look seem come keep let use help work
happen mean find call ask feel leave become show turn check replace fix test inspect install
""".split())

#: Retrieval words: runs of Unicode letters/digits, inner hyphens and apostrophes kept (``won't``, ``v-belt``).
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
#: The pieces a full-text engine's tokenizer splits a word into.
_ALNUM = re.compile(r"[^\W_]+")
#: Entity words are ASCII-only. Unifying them with ``_WORD`` would change the entity terms of 47 of
#: 13,334 corpus texts (none built in; accented words, ``cm³``, footnote marks such as ``speed¹``), and with
#: them the agreement features the shipped ranker was fitted on.
_ENTITY_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
#: BM25 statistics (``index.dense_store.TermStats``) count plain ASCII alphanumeric runs, as they were fitted.
_BM25_TOKEN = re.compile(r"[a-z0-9]+")


# --- retrieval -------------------------------------------------------------------------------------
def words_of(text: str) -> list[str]:
    """Return the lower-cased retrieval words of ``text`` (letters/digits, inner hyphens and apostrophes kept)."""
    return _WORD.findall(text.lower())


def search_tokens(word: str) -> list[str]:
    """Return the alphanumeric pieces of ``word`` that a full-text index tokenizes it into."""
    return _ALNUM.findall(word.lower())


def is_content_word(word: str) -> bool:
    """Return True for a word worth indexing: not a stop word, not punctuation, at least two characters."""
    w = word.lower()
    if w.isdigit():
        return len(w) >= 3  # years and part numbers are worth keeping, "2" and "12" are not
    return len(w) >= 2 and w not in RETRIEVAL_STOP_WORDS and any(ch.isalpha() for ch in w)


def content_words(words: Iterable[str]) -> list[str]:
    """Return the content words of ``words``, lower-cased, first occurrence order, without repeats."""
    seen: dict[str, None] = {}
    for word in words:
        w = word.lower().strip()
        if w and is_content_word(w):
            seen.setdefault(w, None)
    return list(seen)


@lru_cache(maxsize=65536)
def content_pieces(word: str) -> tuple[str, ...]:
    """Return the pieces of ``word`` (``search_tokens``) that are content words, in order (cached: RR terms repeat
    the same words across answers)."""
    return tuple(piece for piece in search_tokens(word) if is_content_word(piece))


def bm25_tokens(text: str) -> list[str]:
    """Return the lower-case ASCII alphanumeric tokens BM25 statistics are counted on."""
    return _BM25_TOKEN.findall(text.lower())


# --- agreement -------------------------------------------------------------------------------------
def entity_words(text: str) -> list[str]:
    """Return the lower-case entity words of ``text``: ASCII letters/digits, inner hyphens and apostrophes kept."""
    return _ENTITY_WORD.findall(text.lower())


def is_entity_word(word: str) -> bool:
    """Return True for a word that can carry an entity (not a stop word, light verb, number or 1-letter token)."""
    return len(word) > 1 and word not in ENTITY_STOP_WORDS and word not in LIGHT_VERBS and not word.isdigit()


_PORTER = None
_PORTER_LOCK = threading.Lock()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Return the NLTK Porter stem of a lowercase word (cached): what entity terms are made of."""
    global _PORTER
    if _PORTER is None:
        with _PORTER_LOCK:
            if _PORTER is None:
                from nltk.stem import PorterStemmer

                _PORTER = PorterStemmer()
    return _PORTER.stem(word)


# --- the SQLite index's own stems ------------------------------------------------------------------
#: The FTS5 tokenizer of the SQLite index: Porter over unicode61, ``_`` kept inside RR tokens (``contrast_start``).
FTS5_TOKENIZER = "porter unicode61 tokenchars '_'"


class FtsStemmer:
    """Maps tokens to the terms the SQLite index's tokenizer makes of them, using a scratch in-memory FTS5 table.

    This is SQLite's own Porter stemmer (not NLTK's, which differs on some words), so document
    frequencies and highlights line up exactly with what the index stored.
    """

    MAX_CACHE = 200_000

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", check_same_thread=False)
        # contentless: the tokens are only tokenized, never read back, and 'delete-all' then empties the table
        # without re-tokenizing every row as a DELETE must (half the cost of stemming new tokens)
        self.conn.execute(f'CREATE VIRTUAL TABLE s USING fts5(x, content="", tokenize="{FTS5_TOKENIZER}")')
        self.conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, 'instance')")
        self.cache: dict[str, str | None] = {}
        self.lock = threading.Lock()

    def stems(self, tokens: Iterable[str]) -> dict[str, str | None]:
        """Return token -> indexed term (None when the tokenizer keeps nothing of it)."""
        wanted = dict.fromkeys(tokens)
        # The answer is read under the lock: another thread may clear the cache (when full) at any moment,
        # and a token missing from it would read as "no term" instead of being stemmed.
        with self.lock:
            cache = self.cache
            missing = [t for t in wanted if t not in cache]
            if missing:
                if len(cache) > self.MAX_CACHE:
                    kept = {t: cache[t] for t in wanted if t in cache}  # the answer below reads them
                    cache.clear()
                    cache.update(kept)
                with self.conn:
                    self.conn.executemany("INSERT INTO s(rowid, x) VALUES (?, ?)", list(enumerate(missing, start=1)))
                    found: dict[int, str] = {}
                    for doc, term in self.conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
                        found.setdefault(doc, term)
                    self.conn.execute("INSERT INTO s(s) VALUES ('delete-all')")
                for i, token in enumerate(missing, start=1):
                    cache[token] = found.get(i)
            return {t: cache[t] for t in wanted}

    def close(self) -> None:
        self.conn.close()
