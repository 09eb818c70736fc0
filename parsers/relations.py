"""The rhetorical relation inventory and the mappings of external label sets into it.

The inventory follows the 18 coarse classes of the RST Discourse Treebank
(Carlson et al. 2002), with Concession kept apart from Contrast because the
dialogue method treats "did X but still Y" concessions as first-class issues.

*Default* relations (Elaboration, Joint, Same-Unit, and the purely textual
Organization) carry no issue of their own: the method of Galitsky & Ilvovsky
splits a question at its *non-default* relations.
"""

from __future__ import annotations

from functools import lru_cache

from parsers.errors import ConfigError

ATTRIBUTION = "Attribution"
BACKGROUND = "Background"
CAUSE = "Cause"
COMPARISON = "Comparison"
CONCESSION = "Concession"
CONDITION = "Condition"
CONTRAST = "Contrast"
ELABORATION = "Elaboration"
ENABLEMENT = "Enablement"
EVALUATION = "Evaluation"
EXPLANATION = "Explanation"
JOINT = "Joint"
MANNER_MEANS = "Manner-Means"
ORGANIZATION = "Organization"
SAME_UNIT = "Same-Unit"
SUMMARY = "Summary"
TEMPORAL = "Temporal"
TOPIC_CHANGE = "Topic-Change"
TOPIC_COMMENT = "Topic-Comment"

#: Every relation a ``DiscourseTree`` node may carry.
RELATIONS: tuple[str, ...] = (
    ATTRIBUTION, BACKGROUND, CAUSE, COMPARISON, CONCESSION, CONDITION, CONTRAST,
    ELABORATION, ENABLEMENT, EVALUATION, EXPLANATION, JOINT, MANNER_MEANS,
    ORGANIZATION, SAME_UNIT, SUMMARY, TEMPORAL, TOPIC_CHANGE, TOPIC_COMMENT,
)

#: Relations that never make an issue of their own (the paper's "default RRs").
DEFAULT_RELATIONS: frozenset[str] = frozenset({ELABORATION, JOINT, SAME_UNIT, ORGANIZATION})

#: Relations that are always multinuclear (every child is a nucleus).
MULTINUCLEAR_RELATIONS: frozenset[str] = frozenset({JOINT, SAME_UNIT, CONTRAST, COMPARISON})

_BY_LOWER = {r.lower(): r for r in RELATIONS}


# both are asked for every node of every stored tree a turn reads, with a few dozen distinct labels
@lru_cache(maxsize=1024)
def is_default(relation: str) -> bool:
    """Return True when ``relation`` is a default relation (Elaboration, Joint, Same-Unit, Organization)."""
    return canonical(relation) in DEFAULT_RELATIONS


@lru_cache(maxsize=1024)
def canonical(relation: str) -> str:
    """Return the inventory spelling of ``relation`` (case- and ``_``/``-``-insensitive).

    Raises ``ConfigError`` for a label outside the inventory; use the
    ``from_gum``/``from_rstdt`` mappings for external label sets.
    """
    key = relation.strip().lower().replace("_", "-")
    if key in _BY_LOWER:
        return _BY_LOWER[key]
    raise ConfigError(f"unknown relation {relation!r}; known: {', '.join(RELATIONS)}")


#: GUM (v9+/eRST) fine-grained labels -> inventory. Antithesis and contrast are
#: RST-DT's Contrast class; sequence is RST-DT's Temporal class; circumstance is
#: RST-DT's Background class; result is RST-DT's Cause class.
GUM_TO_INVENTORY: dict[str, str] = {
    "adversative-antithesis": CONTRAST,
    "adversative-concession": CONCESSION,
    "adversative-contrast": CONTRAST,
    "attribution-negative": ATTRIBUTION,
    "attribution-positive": ATTRIBUTION,
    "causal-cause": CAUSE,
    "causal-result": CAUSE,
    "context-background": BACKGROUND,
    "context-circumstance": BACKGROUND,
    "contingency-condition": CONDITION,
    "elaboration-additional": ELABORATION,
    "elaboration-attribute": ELABORATION,
    "evaluation-comment": EVALUATION,
    "explanation-evidence": EXPLANATION,
    "explanation-justify": EXPLANATION,
    "explanation-motivation": EXPLANATION,
    "joint-disjunction": JOINT,
    "joint-list": JOINT,
    "joint-other": JOINT,
    "joint-sequence": TEMPORAL,
    "mode-manner": MANNER_MEANS,
    "mode-means": MANNER_MEANS,
    "organization-heading": ORGANIZATION,
    "organization-phatic": ORGANIZATION,
    "organization-preparation": ORGANIZATION,
    "purpose-attribute": ENABLEMENT,
    "purpose-goal": ENABLEMENT,
    "restatement-partial": SUMMARY,
    "restatement-repetition": SUMMARY,
    "same-unit": SAME_UNIT,
    "topic-question": TOPIC_COMMENT,
    "topic-solutionhood": TOPIC_COMMENT,
}

#: The 18 coarse classes of RST-DT (as written by common parsers) -> inventory.
#: RST-DT folds concession into Contrast; we keep that, since RST-DT has no
#: separate coarse Concession class to recover it from.
RSTDT_TO_INVENTORY: dict[str, str] = {
    "attribution": ATTRIBUTION,
    "background": BACKGROUND,
    "cause": CAUSE,
    "comparison": COMPARISON,
    "condition": CONDITION,
    "contrast": CONTRAST,
    "elaboration": ELABORATION,
    "enablement": ENABLEMENT,
    "evaluation": EVALUATION,
    "explanation": EXPLANATION,
    "joint": JOINT,
    "manner-means": MANNER_MEANS,
    "topic-comment": TOPIC_COMMENT,
    "summary": SUMMARY,
    "temporal": TEMPORAL,
    "topic-change": TOPIC_CHANGE,
    "textual-organization": ORGANIZATION,
    "textualorganization": ORGANIZATION,
    "same-unit": SAME_UNIT,
}


def _map_label(label: str, table: dict[str, str], scheme: str) -> str:
    """Return ``table``'s inventory relation for ``label``, ignoring case, ``_``/``-`` and ``_r``/``_m`` suffixes."""
    key = label.strip().lower().replace("_", "-")
    for suffix in ("-r", "-m"):
        if key.endswith(suffix):
            key = key[: -len(suffix)]
    if key in table:
        return table[key]
    raise ConfigError(f"unknown {scheme} relation label {label!r}")


def from_gum(label: str) -> str:
    """Return the inventory relation for a GUM label such as ``adversative-concession``.

    Accepts ``_r``/``_m`` suffixes (rs4/isanlp spellings). Raises ``ConfigError`` for unknown labels.
    """
    return _map_label(label, GUM_TO_INVENTORY, "GUM")


def from_rstdt(label: str) -> str:
    """Return the inventory relation for an RST-DT coarse class such as ``Textual-organization``.

    Raises ``ConfigError`` for unknown labels.
    """
    return _map_label(label, RSTDT_TO_INVENTORY, "RST-DT")
