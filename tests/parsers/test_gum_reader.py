from __future__ import annotations

import pytest

from parsers.errors import InputError
from parsers.gum import NON_COMMERCIAL_GENRES, genre_of, iter_gum, read_dis
from parsers.relations import CONTRAST, ELABORATION
from parsers.tree import DiscourseTree

SMALL_DIS = """( Root (span 1 3)
  ( Nucleus (span 1 2) (rel2par span)
    ( Nucleus (leaf 1) (rel2par adversative-contrast) (text _!I replaced the battery ,_!) )
    ( Nucleus (leaf 2) (rel2par adversative-contrast) (text _!but it still won't start ._!) )
  )
  ( Satellite (leaf 3) (rel2par elaboration-additional) (text _!It is a 2012 Civic ._!) )
)"""


def test_read_dis_builds_relations_nuclearity_and_spans():
    tree = read_dis(SMALL_DIS)
    assert [e.text for e in tree.edus] == ["I replaced the battery ,", "but it still won't start .", "It is a 2012 Civic ."]
    assert tree.root.relation == ELABORATION and tree.root.nuclearity == ("N", "S")
    contrast = tree.root.children[0]
    assert contrast.relation == CONTRAST and contrast.nuclearity == ("N", "N")
    for edu in tree.edus:
        assert tree.text[edu.start:edu.end] == edu.text
    assert [e.sentence for e in tree.edus] == [0, 0, 1]


def test_read_dis_rejects_malformed_input():
    with pytest.raises(InputError):
        read_dis("( Root (span 1 2) ( Nucleus (leaf 1) (text _!a_!) )")
    with pytest.raises(InputError):
        read_dis("")


def test_genre_of():
    assert genre_of("GUM_academic_art") == "academic"
    assert genre_of("GUM_voyage_oakland") == "voyage"


@pytest.mark.gum
def test_every_gum_document_reads_and_round_trips(gum_dir):
    docs = list(iter_gum(gum_dir))
    assert {d.split for d in docs} == {"train", "dev", "test"}
    for doc in docs:
        tree = doc.tree
        assert tree.root.span == (0, len(tree.edus) - 1)
        assert DiscourseTree.from_json(tree.to_json()) == tree
    permissive = list(iter_gum(gum_dir, split="train", exclude_genres=NON_COMMERCIAL_GENRES))
    assert permissive and all(d.genre not in NON_COMMERCIAL_GENRES for d in permissive)
