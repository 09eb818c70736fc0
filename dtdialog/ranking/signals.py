"""Raw per-candidate signals for the learned ranker, from what the selector hands a scorer.

The selector gives a scorer the question plan, the step's part, the follow-ups and candidates with
their retrieval score and rhetorical-agreement result. ``SignalExtractor`` adds the dense cosine
(through ``DenseSignals``), ``rr_edu`` matches, relation-compatibility flags, entity overlap, term
overlap, lengths, the answer's closeness to the part's nuclei and to its satellites apart (only when the part has
a non-default relation: two short texts, encoded in one batch) and, optionally, the syntactic-generalization
score. The same extractor runs at training time (``eval.train_ranker``) and in the engine, so the model sees identical features.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from dtdialog.ranking.dense_signals import DenseSignals, dense_query_text, query_messages
from dtdialog.ranking.features import CandidateSignals
from dtdialog.selection.agreement import AgreementTable
from dtdialog.selection.scoring import RankedCandidate
from dtdialog.understanding.query_builder import rr_term
from dtdialog.understanding.subtrees import QuestionPart, QuestionPlan, part_sides
from index.base import RRTerm
from index.vocabulary import entity_words, is_entity_word
from parsers.relations import is_default


def _rr_parts(term: RRTerm) -> tuple[str, frozenset[str]]:
    """Return (relation, lower-cased words) of a stored RR term."""
    return term.relation.strip(), frozenset(w.lower() for w in term.words)


@lru_cache(maxsize=20_000)
def _answer_reading(text: str, rr_edu: tuple[RRTerm, ...]) -> tuple[frozenset[str], int, tuple]:
    """Return an answer's entity words, their count and its RR terms' parts: the same every step it is a candidate
    (a step reads ~70 answers, most of them seen before)."""
    words = entity_words(text)
    return frozenset(words), len(words), tuple(map(_rr_parts, rr_edu))


class SignalExtractor:
    """Computes ``CandidateSignals`` for the candidates of one step.

    ``dense``: the dense store and query encoder (None: no dense signals); ``use_sg``: compute the
    syntactic-generalization score; ``sg_store``: the answers' phrases parsed at index time
    (``index.sg_store``), so only the query is parsed per turn (an answer it lacks is parsed, cached);
    ``use_sides``: compute the nucleus / satellite signals (off for a model that does not read them).
    """

    def __init__(self, *, dense: DenseSignals | None = None, table: AgreementTable | None = None,
                 use_sg: bool = True, sg_store=None, use_sides: bool = True) -> None:
        self.dense = dense
        self.table = table or AgreementTable.load()
        self.use_sg = use_sg
        self.sg_store = sg_store
        self.use_sides = use_sides

    def signals(self, *, plan: QuestionPlan, part_index: int, followups: Sequence[str],
                candidates: Sequence[RankedCandidate]) -> list[CandidateSignals]:
        """Return one ``CandidateSignals`` per candidate, in order."""
        if not candidates:
            return []
        query = dense_query_text(plan.question, followups)
        part = plan.parts[min(max(part_index, 0), len(plan.parts) - 1)]
        q_relations = [r for r in part.relations if not is_default(r.relation)]
        q_rr = [rr_term(r) for r in q_relations]
        q_rr = [(t.relation, frozenset(w.lower() for w in t.words)) for t in q_rr if t.words]
        query_words = entity_words(query)
        query_terms = {w for w in query_words if is_entity_word(w)}
        ids = [c.document.id for c in candidates]
        cosines = self.dense.cosines(query, ids) if self.dense is not None else None
        hubs = self.dense.store.hub_of(ids) if self.dense is not None else None
        terms = self.dense.store.terms if self.dense is not None else None
        texts = [c.document.text for c in candidates]
        bm25 = terms.bm25(query, texts) if terms is not None else None
        sg = self._sg(query_messages(plan.question, followups), candidates) if self.use_sg else None
        sides = self._sides(part, ids, texts, terms) if q_relations and self.use_sides else {}
        out = []
        for i, cand in enumerate(candidates):
            doc = cand.document
            answer_words, n_answer_words, doc_rr = _answer_reading(doc.text, doc.rr_edu)
            rr_matches = sum(1 for rel, words in q_rr if any(rel == d_rel and words & d_words for d_rel, d_words in doc_rr))
            compat = [any(self.table.addresses(r.relation, a) for a in doc.relations) for r in q_relations]
            dense = None
            if cosines is not None and cosines[i] == cosines[i]:  # NaN: not in the store
                dense = float(cosines[i])
            # the hybrid generator gives dense-only hits (and the selector the logged successor) score 0
            lexical = float(cand.retrieval_score) if cand.retrieval_score > 0 else None
            out.append(CandidateSignals(
                doc_id=doc.id, lexical=lexical, bm25=float(bm25[i]) if bm25 is not None else None, dense=dense, hub=float(hubs[i]) if hubs is not None else 0.0,
                query_terms=len(query_terms), shared_terms=len(query_terms & answer_words),
                answer_words=n_answer_words, query_words=len(query_words),
                agreement_verdict=bool(cand.agreement.verdict), agreement_score=float(cand.agreement.score),
                addressed=int(cand.agreement.addressed), required=int(cand.agreement.required),
                rr_edu_matches=rr_matches, entity_overlap=len(cand.agreement.overlap),
                compat_any=any(compat), compat_all=bool(compat) and all(compat),
                sg=sg[i] if sg is not None else None, has_relation=bool(q_relations),
                **{name: values[i] for name, values in sides.items()},
            ))
        return out

    def _sides(self, part: QuestionPart, ids: list[str], texts: list[str], terms) -> dict[str, list]:
        """Return ``{nucleus_dense, nucleus_bm25, satellite_dense, satellite_bm25: one value or None per candidate}``
        (a side without EDUs, or a signal without its store, is left out: its features are 0)."""
        sides = part_sides(part)
        side_texts = {"nucleus": sides.nuclei_text.strip(), "satellite": sides.satellites_text.strip()}
        out: dict[str, list] = {}
        if self.dense is not None:
            self.dense.prime([t for t in side_texts.values() if t])  # both sides in one encoder call
        for side, text in side_texts.items():
            if not text:
                continue
            if self.dense is not None:
                out[f"{side}_dense"] = [None if c != c else float(c) for c in self.dense.cosines(text, ids)]
            if terms is not None:
                out[f"{side}_bm25"] = [float(v) for v in terms.bm25(text, texts)]
        return out

    def prefetch(self, messages: tuple[str, ...]) -> None:
        """Start the SG parse of a step's messages in the background (no-op without the SG feature)."""
        if self.use_sg:
            from dtdialog.selection.syntactic_generalization import prefetch

            prefetch(messages)

    def seed_query(self, text: str, analyzed, backend) -> None:
        """Give the SG feature the engine's own parse of a question (``backend``: the parser's spaCy backend),
        so the step's SG query parse (``prefetch``) finds it done (no-op without the SG feature). The parse is of
        the cleaned question, which is what the SG feature parses (``syntactic_generalization.sg_text``)."""
        if self.use_sg:
            from dtdialog.selection.syntactic_generalization import seed

            seed(text, analyzed, nlp=backend.nlp, disabled=getattr(backend, "disable", ()))

    def _sg(self, query: tuple[str, ...], candidates: Sequence[RankedCandidate]) -> list[float]:
        """Return the SG score of each candidate for the step's messages ``query``: from its stored phrases when the
        store has them, else parsed."""
        from dtdialog.selection.syntactic_generalization import sg_score, sg_score_keys, sg_score_phrases

        store = self.sg_store
        if store is None:
            return [float(sg_score(query, cand.document.text)) for cand in candidates]
        store.prime([c.document.id for c in candidates])  # a remote store fetches the whole step's in one request
        # the phrases' (kind, lemmas, pos) keys score as the phrases do and decode cheaper (index.sg_store)
        keys_of = getattr(store, "phrase_keys", None)
        score_stored, stored_of = (sg_score_keys, keys_of) if keys_of is not None else (sg_score_phrases, store.phrases)
        out = []
        for cand in candidates:
            stored = stored_of(cand.document.id)
            out.append(float(score_stored(query, stored) if stored is not None else sg_score(query, cand.document.text)))
        return out
