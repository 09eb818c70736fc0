"""Relation inventory and the GUM / RST-DT label mappings."""

from __future__ import annotations

import re

import pytest

from parsers.errors import ConfigError
from parsers.relations import (
    DEFAULT_RELATIONS,
    GUM_TO_INVENTORY,
    RELATIONS,
    RSTDT_TO_INVENTORY,
    canonical,
    from_gum,
    from_rstdt,
    is_default,
)


def test_default_relations_are_exactly_the_paper_defaults_plus_organization():
    assert DEFAULT_RELATIONS == {"Elaboration", "Joint", "Same-Unit", "Organization"}
    for rel in ("Contrast", "Concession", "Condition", "Cause", "Explanation", "Attribution", "Enablement",
                "Temporal", "Background", "Evaluation", "Manner-Means", "Comparison", "Summary"):
        assert not is_default(rel), rel


def test_mappings_land_in_inventory():
    assert set(GUM_TO_INVENTORY.values()) <= set(RELATIONS)
    assert set(RSTDT_TO_INVENTORY.values()) <= set(RELATIONS)


@pytest.mark.parametrize("label,expected", [
    ("adversative-concession", "Concession"), ("adversative-concession_r", "Concession"),
    ("adversative-contrast_m", "Contrast"), ("joint-sequence_m", "Temporal"), ("same-unit_m", "Same-Unit"),
    ("purpose-goal", "Enablement"), ("attribution-positive_r", "Attribution"), ("causal-result", "Cause"),
])
def test_gum_examples(label, expected):
    assert from_gum(label) == expected


@pytest.mark.parametrize("label,expected", [
    ("Elaboration", "Elaboration"), ("same-unit", "Same-Unit"), ("Textual-organization", "Organization"),
    ("Manner-Means", "Manner-Means"), ("Topic-Change", "Topic-Change"), ("contrast_r", "Contrast"),
])
def test_rstdt_examples(label, expected):
    assert from_rstdt(label) == expected


def test_unknown_labels_raise_config_error():
    with pytest.raises(ConfigError):
        from_gum("made-up-relation")
    with pytest.raises(ConfigError):
        from_rstdt("nonsense")
    with pytest.raises(ConfigError):
        canonical("nonsense")


@pytest.mark.gum
def test_every_gum_rs4_header_label_maps(gum_dir):
    files = sorted((gum_dir / "rstweb").glob("*.rs4"))
    if not files:
        pytest.skip(f"no rstweb/*.rs4 files in {gum_dir}")
    labels = set()
    for path in files:
        labels |= set(re.findall(r'<rel name="([^"]+)" type="(?:rst|multinuc)"', path.read_text(encoding="utf-8")))
    assert len(labels) >= 20
    for label in sorted(labels):
        assert from_gum(label) in RELATIONS, label
