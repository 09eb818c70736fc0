"""The matched-chains picture: Q relation boxes -> A relation boxes, escaped, with unaddressed relations in red."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from dtdialog.api.explain import chains_to_svg, split_chain

NS = "{http://www.w3.org/2000/svg}"


def test_split_chain():
    assert split_chain("Contrast[replaced battery] -> Condition[no fuel pressure]") == \
        ("Contrast[replaced battery]", "Condition[no fuel pressure]")
    assert split_chain("Elaboration[alone]") == ("Elaboration[alone]", "")


def test_each_chain_is_two_boxes_and_an_arrow_and_text_is_escaped():
    svg = chains_to_svg(["Contrast[replaced <battery> & plugs] -> Cause[check spark]",
                         "Concession[new coils] -> Condition[sensor fails]"], missing=["Temporal[still cranks]"])
    root = ET.fromstring(svg)  # well-formed XML: the "<" and "&" were escaped
    groups = [g.get("class") for g in root.iter(f"{NS}g")]
    assert groups == ["q", "a", "q", "a", "none"]
    assert len(list(root.iter(f"{NS}line"))) == 2
    texts = [t.text for t in root.iter(f"{NS}text")]
    assert "replaced <battery> & plugs" in texts and "not addressed" in texts
    assert root.get("role") == "img" and root.get("aria-label")


def test_no_chain_gives_a_short_note():
    root = ET.fromstring(chains_to_svg([]))
    assert "No relation chain matched" in "".join(t.text or "" for t in root.iter(f"{NS}text"))
