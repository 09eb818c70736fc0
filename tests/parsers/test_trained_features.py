"""Segmenter labels/feature alignment and the tree builder, on tiny hand-made analyses (no spaCy, no model)."""

from __future__ import annotations

from parsers.features import (
    Attachment,
    DocContext,
    EduView,
    SyntaxIndex,
    all_boundary_features,
    boundary_labels,
    edus_from_labels,
    pair_features,
)
from parsers.nlp_base import AnalyzedText, Token
from parsers.tree_builder import (
    INTER,
    INTRA,
    assemble,
    build_merges,
    gold_oracle_pairs,
    greedy_merges,
    label_merges,
    sentence_groups,
)

# "I checked the plugs , but it still failed ." with a hand-written dependency parse.
_WORDS = [
    # text, lemma, pos, tag, dep, head
    ("I", "i", "PRON", "PRP", "nsubj", 1),
    ("checked", "check", "VERB", "VBD", "ROOT", 1),
    ("the", "the", "DET", "DT", "det", 3),
    ("plugs", "plug", "NOUN", "NNS", "dobj", 1),
    (",", ",", "PUNCT", ",", "punct", 1),
    ("but", "but", "CCONJ", "CC", "cc", 1),
    ("it", "it", "PRON", "PRP", "nsubj", 9),
    ("still", "still", "ADV", "RB", "advmod", 9),
    ("failed", "fail", "VERB", "VBD", "conj", 1),
    (".", ".", "PUNCT", ".", "punct", 1),
]


def _analyzed() -> AnalyzedText:
    tokens = []
    pos = 0
    text_parts = []
    for i, (w, lemma, upos, tag, dep, head) in enumerate(_WORDS):
        # Fix the head of "it"/"still": they attach to "failed" (index 8).
        head = 8 if head == 9 else head
        tokens.append(Token(i=i, text=w, idx=pos, lemma=lemma, pos=upos, tag=tag, dep=dep, head=head, sent=0,
                            is_punct=upos == "PUNCT"))
        text_parts.append(w)
        pos += len(w) + 1
    text = " ".join(text_parts)
    return AnalyzedText(text=text, tokens=tuple(tokens), sentences=((0, len(tokens)),))


def test_boundary_labels_align_edu_char_starts_to_tokens():
    a = _analyzed()
    second_edu_start = a.text.index("but")
    labels = boundary_labels(a, [0, second_edu_start])
    assert labels == [1, 0, 0, 0, 0, 1, 0, 0, 0, 0]
    # An offset inside a token snaps to that token.
    assert boundary_labels(a, [0, second_edu_start + 1])[5] == 1


def test_boundary_features_one_dict_per_token_with_context():
    a = _analyzed()
    feats = all_boundary_features(a)
    assert len(feats) == len(a.tokens)
    but = feats[5]
    assert but["w0=but"] == 1.0
    assert but["w-1=,"] == 1.0
    assert but["marker0"] == 1.0
    assert but["prevpunct=True"] == 1.0
    assert feats[0]["sentstart=True"] == 1.0


def test_boundary_features_describe_the_clauses_starting_and_ending_around_the_token():
    feats = all_boundary_features(_analyzed())
    it = feats[6]  # "it" opens the subtree of "failed", a conjoined clause with a subject
    assert it["starts=conj|VERB|subj=True"] == 1.0
    assert it["startsclause"] == 1.0
    assert it["startslen=<=3"] == 1.0  # "it still failed"
    but = feats[5]
    assert but["nextstarts=conj|VERB|w0=but"] == 1.0
    assert but["ends=punct|PUNCT"] == 1.0  # the subtree of "," closes just before "but"
    assert but["starts=cc|CCONJ|prev=,"] == 1.0
    assert but["sentpos=<=5"] == 1.0 and it["sentpos=<=8"] == 1.0
    # At a sentence start no subtree features fire: the boundary is given by the sentence.
    assert not any(k.startswith(("starts", "nextstarts")) for k in feats[0])
    assert "d-1=punct" not in feats[0] and "marker0" not in feats[0]


def test_attachment_between_spans_and_its_direction():
    ctx = DocContext(analyzed=_analyzed(), edus=[EduView(0, 5, 0), EduView(5, 10, 0)])
    attach = Attachment.between(ctx, (0, 0), (1, 1))
    assert attach.r_into_l == [1] and attach.l_into_r == []  # "failed" hangs off "checked"
    assert attach.direction == "R->L"
    assert Attachment(r_into_l=[], l_into_r=[]).direction == "-"
    assert Attachment(r_into_l=[1], l_into_r=[0]).direction == "L->R"
    f = pair_features(ctx, (0, 0), (1, 1), level=INTER)
    assert f["Rw1|attach=but|R->L"] == 1.0 and f["Lw1|attach=i|R->L"] == 1.0
    assert f["Rw1inter=but"] == 1.0 and "noattach" not in f
    assert "Rw1inter=but" not in pair_features(ctx, (0, 0), (1, 1), level=INTRA)


def test_subtree_edges_follow_heads():
    syn = SyntaxIndex.of(_analyzed())
    assert syn.left_edge[1] == 0 and syn.right_edge[1] == 9
    assert syn.left_edge[8] == 6 and syn.right_edge[8] == 8


def test_edus_from_labels_merges_punctuation_only_units():
    a = _analyzed()
    labels = [1, 0, 0, 0, 1, 1, 0, 0, 0, 1]  # "," and "." flagged as EDU starts
    views = edus_from_labels(a, labels)
    assert [(v.start, v.end) for v in views] == [(0, 5), (5, 10)]


def test_pair_features_see_syntactic_attachment():
    a = _analyzed()
    ctx = DocContext(analyzed=a, edus=[EduView(0, 5, 0), EduView(5, 10, 0)])
    f = pair_features(ctx, (0, 0), (1, 1), level=INTRA)
    assert f["R->L"] == 1.0 and f["R->L:conj"] == 1.0
    assert f["Rs:w1=but"] == 1.0
    assert f["samesent=True"] == 1.0


def test_greedy_merges_follow_scores_and_cover_everything():
    items = [(i, i) for i in range(4)]
    # Prefer merging (1,1)+(2,2) first, then its left neighbour.
    prefs = {((1, 1), (2, 2)): 0.9, ((0, 0), (1, 2)): 0.8}
    merges = greedy_merges(items, lambda pairs: [prefs.get(p, 0.1) for p in pairs], level=INTRA)
    assert [m.span for m in merges] == [(1, 2), (0, 2), (0, 3)]


def test_build_merges_keeps_sentences_together_and_assembles_a_tree():
    sentences = [0, 0, 1, 1, 1]
    assert sentence_groups(sentences) == [(0, 1), (2, 4)]
    merges = build_merges(sentences, score_intra=lambda ps: [0.5] * len(ps), score_inter=lambda ps: [0.5] * len(ps))
    spans = [m.span for m in merges]
    assert spans.index((0, 1)) < spans.index((0, 4)) and (1, 2) not in spans
    labels = label_merges(merges, label_intra=lambda ps: [("Attribution", "SN")] * len(ps),
                          label_inter=lambda ps: [("Contrast", "NN")] * len(ps))
    root = assemble(5, merges, labels)
    assert root.span == (0, 4) and root.relation == "Contrast"
    assert {n.relation for n in root.walk() if not n.is_leaf} == {"Attribution", "Contrast"}


def test_gold_oracle_labels_pairs_and_stops_at_non_constituents():
    gold = {(0, 1), (0, 2)}
    pairs, frontier = gold_oracle_pairs([(0, 0), (1, 1), (2, 2)], gold)
    labelled = dict(pairs)
    assert labelled[((0, 0), (1, 1))] == 1
    assert labelled[((1, 1), (2, 2))] == 0
    assert labelled[((0, 1), (2, 2))] == 1
    assert frontier == [(0, 2)]
    # Without a gold pair the run stops and hands the items on (to the inter-sentence level).
    pairs, frontier = gold_oracle_pairs([(3, 3), (4, 4)], gold)
    assert pairs == [(((3, 3), (4, 4)), 0)] and frontier == [(3, 3), (4, 4)]
    assert INTER != INTRA
