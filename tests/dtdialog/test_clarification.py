"""Clarification options: distinguishing labels, and matching replies by number, phrase or "none of these"."""

from __future__ import annotations

from dataclasses import replace

from engine_helpers import build_tree

from dtdialog.selection.clarification import (
    MAX_LABEL_CHARS,
    NONE_LABEL,
    PendingChoice,
    build_options,
    clause_ends,
    distinctive_terms,
    match_reply,
    prompt_text,
    readable,
)
from dtdialog.understanding.entities import EntityNormalizer

NORM = EntityNormalizer(synonyms={}, use_builtin=False)
CANDS = [
    ("a#1", build_tree(("Condition", "SN", ["If the engine cranks", "test the fuel pressure at the rail"])).edus),
    ("b#1", build_tree(("Condition", "SN", ["If the engine cranks", "test the crankshaft position sensor"])).edus),
]


def test_labels_are_distinguishing_phrases_never_labels_or_ids():
    pending = build_options(CANDS, normalizer=NORM, max_options=3)
    labels = [o.label for o in pending.options]
    assert labels[-1] == NONE_LABEL and pending.options[-1].answer_id == ""
    assert "fuel" in labels[0] and "crankshaft" not in labels[0]
    assert "crankshaft" in labels[1] and "fuel" not in labels[1]
    for label in labels:
        assert "Condition" not in label and "#" not in label and "engine" not in label  # shared words don't distinguish


def test_match_by_number_phrase_and_none():
    pending = build_options(CANDS, normalizer=NORM)
    assert match_reply("", pending, normalizer=NORM, number=2).answer_id == "b#1"
    assert match_reply("the fuel pressure one", pending, normalizer=NORM).answer_id == "a#1"
    assert match_reply("crank sensor", pending, normalizer=NORM).answer_id == "b#1"
    assert match_reply("None of these", pending, normalizer=NORM).label == NONE_LABEL
    assert match_reply("what about the tires", pending, normalizer=NORM) is None
    assert match_reply("", pending, normalizer=NORM, number=9) is None


def test_max_options_and_reprompt_lists_options_again():
    many = CANDS + [("c#1", build_tree("Replace the ignition switch").edus),
                    ("d#1", build_tree("Check the immobiliser key chip").edus)]
    pending = build_options(many, normalizer=NORM, max_options=3)
    assert len(pending.options) == 4
    again = prompt_text(pending, again=True)
    assert "could not match" in again and all(o.label in again for o in pending.options)


# --- review defect: one common word picked an option ------------------------------------------------
OVERHEAT_Q = "My engine overheats when I sit in traffic, but it is fine on the highway."
OVERHEAT_CANDS = [
    ("fan#1", build_tree(("Condition", "SN", ["If the cooling fan does not switch on in traffic",
                                              "check the fan relay and the fan fuse"])).edus),
    ("hose#1", build_tree(("Cause", "NS", ["A cool upper radiator hose on a hot engine",
                                           "means the thermostat is stuck closed"])).edus),
]


def test_a_question_word_in_one_label_does_not_pick_that_option():
    question_terms = NORM.terms_of_text(OVERHEAT_Q)
    pending = build_options(OVERHEAT_CANDS, normalizer=NORM, ignore_terms=question_terms)
    assert "engin" in pending.terms["hose#1"] and "engin" not in pending.terms["fan#1"]
    # "engine" occurs only in option 2, but the user's question already said it: it tells nothing apart
    assert match_reply("I can't remove the engine", pending, normalizer=NORM) is None
    assert match_reply("the engine one", pending, normalizer=NORM) is None
    # distinctive words still pick, from the label or (at half weight) from the answer text
    assert match_reply("the radiator hose", pending, normalizer=NORM).answer_id == "hose#1"
    assert match_reply("relay", pending, normalizer=NORM).answer_id == "fan#1"
    # the terms survive the session round trip
    restored = PendingChoice.from_dict(pending.to_dict())
    assert match_reply("I can't remove the engine", restored, normalizer=NORM) is None


def test_words_common_to_all_options_or_tied_pick_nothing():
    pending = build_options(CANDS, normalizer=NORM)
    distinctive = distinctive_terms(pending, normalizer=NORM)
    assert "engin" not in distinctive["a#1"] | distinctive["b#1"]   # "If the engine cranks" is in both
    assert match_reply("the engine cranks", pending, normalizer=NORM) is None
    assert match_reply("fuel or crankshaft?", pending, normalizer=NORM) is None  # one distinctive word each: a tie


def _edus_with_chunks(sentences: list[tuple[str, tuple[str, ...]]]):
    """Return EDUs carrying the noun chunks a spaCy-backed parser would attach."""
    from dataclasses import replace

    edus = build_tree(("Joint", "N" * len(sentences), [s for s, _ in sentences])).edus
    return tuple(replace(e, entities=chunks) for e, (_, chunks) in zip(edus, sentences))


# the paper's regression: labels were "engine cranks, job, question" - generic words, not what to do
PAPER_ANSWER = _edus_with_chunks([
    ("Since the engine cranks, the starter side is doing its job,", ("engine cranks", "starter side", "job")),
    ("so the question is whether the engine is getting both spark and fuel.", ("question", "engine", "spark", "fuel")),
    ("Spray a short shot of starting fluid into the intake.", ("short shot", "starting fluid", "intake")),
    ("If it catches on the starting fluid, the fuel supply is the weak link.",
     ("starting fluid", "fuel supply", "weak link")),
])
HVAC_ANSWER = _edus_with_chunks([
    ("On dual-zone systems, each side has its own blend door actuator.", ("dual-zone systems", "side",
                                                                          "blend door actuator")),
    ("After a dead battery, the actuators can lose their calibration.", ("dead battery", "actuators", "calibration")),
    ("It is the most common reason and a cheap and likely fix.", ("most common reason", "cheap and likely fix")),
])


def _is_clause_of(label: str, edus) -> bool:
    """Return True when ``label`` is a piece of the answer's own text (case aside), not assembled keywords."""
    text = " ".join(e.text for e in edus).lower()
    return label.lower() in text


def test_labels_are_clauses_of_their_answer_never_keyword_lists():
    question = NORM.terms_of_text("I replaced the battery and the coils but my car still won't start.")
    pending = build_options([("paper#1", PAPER_ANSWER), ("hvac#1", HVAC_ANSWER)], normalizer=NORM,
                            ignore_terms=question)
    labels = [o.label for o in pending.options[:-1]]
    assert len(set(labels)) == len(labels)
    for label, edus in zip(labels, (PAPER_ANSWER, HVAC_ANSWER)):
        assert _is_clause_of(label, edus), label
        assert len(label) <= MAX_LABEL_CHARS and len(label.split()) >= 3
    # the paper's answer is about spark and fuel, the HVAC one about the blend door actuator
    assert "fuel" in labels[0].lower() or "starting fluid" in labels[0].lower()
    assert "actuator" in labels[1].lower()
    assert match_reply("the spark and fuel one", pending, normalizer=NORM).answer_id == "paper#1"
    assert match_reply("blend door", pending, normalizer=NORM).answer_id == "hvac#1"


def test_the_label_is_the_nucleus_not_the_condition():
    tree = build_tree(("Condition", "SN", ["If the coolant reservoir is low after a long drive",
                                           "replace the radiator cap and pressure test the system"]))
    other = build_tree(("Condition", "SN", ["If the fan never comes on",
                                            "check the fan relay and the fan fuse"]))
    pending = build_options([("cap#1", tree.edus, tree), ("fan#1", other.edus, other)], normalizer=NORM)
    assert pending.options[0].label == "Replace the radiator cap and pressure test the system"
    assert pending.options[1].label == "Check the fan relay and the fan fuse"


def test_long_clauses_are_cut_only_at_a_clause_boundary_and_short_fragments_joined():
    listing = "P0174 on bank 2 alone can also be a vacuum leak on that side, a weak fuel pump, or a dirty airflow sensor"
    assert readable(listing) == listing  # a list has no clause boundary: whole, never "..., a weak"
    two = ("The ABS and traction control both rely on those sensors, so one bad signal disables both systems and "
           "lights the warning lamps.")
    assert readable(two) == "The ABS and traction control both rely on those sensors"
    assert readable("First inspect the vacuum hose from the intake manifold to the booster; then the check valve "
                    "and its grommet.") == "First inspect the vacuum hose from the intake manifold to the booster"
    # an EDU boundary inside a joined span is a clause boundary too, when the head is a clause on its own
    span = ["Resurfacing the rotors is fine", "if they stay above the minimum thickness stamped on them after machining"]
    assert readable(" ".join(span), edu_ends=[5, 17]) == "Resurfacing the rotors is fine"
    assert readable("and then spray a short shot of starting fluid.") == "Spray a short shot of starting fluid"
    # found by trying the chat: the segmenter cut "as long | as air did not get into the ABS unit"
    assert readable("Usually the normal bleeding procedure works, as long") == "Usually the normal bleeding procedure works"
    assert readable("Keep it as long") == "Keep it as long"  # no comma before it: nothing was cut off
    # found by trying the chat: an EDU that kept the comma of the clause before it was offered as ", it's worn, ..."
    assert readable(", it's worn, so replace the whole axle shaft") == "It's worn, so replace the whole axle shaft"
    assert readable(",it's worn") == "It's worn"
    pending = build_options([("a#1", build_tree(("Cause", "NS", ["It may get the brake grease",
                                                                  "on the pad backing plates"])).edus),
                             ("b#1", build_tree(("Cause", "NS", ["New pads squeal",
                                                                  "because the rotors were not resurfaced"])).edus)],
                            normalizer=NORM)
    labels = [o.label for o in pending.options[:-1]]
    assert "brake grease" in labels[0] and "," not in labels[0]
    assert "rotors" in labels[1]


def _ends_at_a_clause_boundary(label: str, text: str, edu_ends) -> bool:
    """Return True when ``label`` is ``text`` up to its end, an EDU's end, or punctuation (never mid-phrase)."""
    words = text.split()
    flat = [w.lower().rstrip(",;:.?!") for w in words]
    kept = [w.lower().rstrip(",;:.?!") for w in label.split()]
    for start in range(len(words) - len(kept) + 1):
        k = start + len(kept)
        if flat[start:k] == kept:
            return k == len(words) or k in edu_ends or words[k - 1].endswith((",", ";", ":", ".", "?", "!"))
    return False


def test_every_label_over_the_builtin_corpus_ends_at_a_clause_boundary(builtin_rules_index):
    """Every answer of the built-in corpus, offered beside the other answers of its dialogue: no label is cut
    mid-phrase ("... on that side, a weak"), and the few longer than ``MAX_LABEL_CHARS`` are whole clauses."""
    from collections import defaultdict

    from dtdialog.selection.clarification import _clauses, _edu_ends, satellite_depths
    from index.sqlite_index import SqliteIndex
    from parsers.tree import DiscourseTree

    index = SqliteIndex(builtin_rules_index, readonly=True)
    try:
        dialogues = defaultdict(list)
        for doc_id in index.ids():
            doc = index.get(doc_id)
            tree = DiscourseTree.from_dict(doc.tree)
            dialogues[doc.dialogue_id].append((doc_id, tree.edus, tree))
    finally:
        index.close()
    spans = {}
    for answers in dialogues.values():
        for _, edus, tree in answers:
            for span in _clauses(edus, satellite_depths(tree)):
                text = " ".join(e.text for e in span)
                spans.setdefault(readable(text, edu_ends=_edu_ends(span)).lower(), (text, _edu_ends(span)))
    labels = [o.label for answers in dialogues.values() if len(answers) > 1
              for o in build_options(answers, normalizer=NORM).options[:-1]]
    assert len(labels) > 300
    for label in labels:
        text, ends = spans[label.lower()]
        assert _ends_at_a_clause_boundary(label, text, ends), (label, text)
        assert len(label) <= MAX_LABEL_CHARS or not clause_ends(text.split(), ends), (label, text)
    assert sum(len(label) > MAX_LABEL_CHARS for label in labels) <= len(labels) // 50


def test_an_aside_is_no_name_for_a_fix():
    # a parenthesis, a footnote and a forum's meta line carry distinctive words, but they name no fix
    asides = [
        ("a#1", build_tree(("Elaboration", "NS", ["Check the ground strap to the engine block.",
                                                 "(I bought the truck with only 31K miles on it.)"])).edus),
        ("b#1", build_tree(("Elaboration", "NS", ["Check the starter relay in the fuse box.",
                                                 "\u00b9 - The workshop handbook explains how to estimate wiring loss."])).edus),
        ("c#1", build_tree(("Elaboration", "NS", ["Clean the battery terminals with a wire brush.",
                                                 "Related posts: gearbox impact and clutch wear"])).edus),
    ]
    labels = [o.label for o in build_options(asides, normalizer=NORM, max_options=3).options[:3]]
    assert labels == ["Check the ground strap to the engine block", "Check the starter relay in the fuse box",
                      "Clean the battery terminals with a wire brush"]


def test_a_clause_keeps_the_rest_of_its_sentence_when_it_fits_and_is_no_more_central():
    """"Cables can also stretch" was a label; its sentence ends "or seize with rust", a satellite that fits."""
    tree = build_tree(("Elaboration", "NS", ["Still, new tires are a good time", "to have the alignment checked."]))
    other = build_tree(("Condition", "SN", ["If the fan never comes on,", "check the fan relay and the fan fuse"]))
    pending = build_options([("tires#1", tree.edus, tree), ("fan#1", other.edus, other)], normalizer=NORM)
    assert pending.options[0].label == "New tires are a good time to have the alignment checked"
    # a condition before its nucleus does not head a joined label: the nucleus is the fix's name
    assert pending.options[1].label == "Check the fan relay and the fan fuse"


def test_a_word_only_in_an_answer_text_is_no_pick():
    """"is it safe to keep driving?" picked the option whose answer text (never shown) said "don't drive far"."""
    pending = build_options(CANDS, normalizer=NORM)
    pending.terms["a#1"] = sorted(set(pending.terms["a#1"]) | NORM.terms_of_text("do not drive far"))
    assert match_reply("is it safe to keep driving?", pending, normalizer=NORM) is None
    assert match_reply("the fuel one, can I keep driving?", pending, normalizer=NORM).answer_id == "a#1"


def test_a_subordinate_clause_alone_is_no_label():
    """"Since a corroded ground limits current" was offered as an option: a circumstance, not a fix."""
    ground = build_tree(("Joint", "NNN", ["Since a corroded ground limits current,", "a slow crank is common.",
                                         "Clean the strap."]))
    fuel = build_tree(("Joint", "NN", ["Leaking injectors can also cause this.", "Check the fuel pressure hold."]))
    pending = build_options([("g#1", ground.edus, ground), ("f#1", fuel.edus, fuel)], normalizer=NORM)
    assert not pending.options[0].label.lower().startswith("since"), pending.options[0].label


def test_a_label_never_starts_where_the_segmenter_cut_a_phrase():
    """"Closed or the ECM is running the fan" and "Left disconnected, a gasket" were options: EDUs that begin inside
    the phrase before them ("the fan relay is stuck | closed", "a vacuum hose | left disconnected")."""
    fan = build_tree(("Joint", "NNN", ["It means the relay is stuck",
                                       "closed", "or the ECM is running the fan in a fail-safe mode."]))
    leak = build_tree(("Joint", "NNN", ["A high idle after intake work is a vacuum leak, such as a vacuum hose",
                                        "left disconnected, a gasket", "not seated properly."]))
    pending = build_options([("fan#1", fan.edus, fan), ("leak#1", leak.edus, leak)], normalizer=NORM)
    # the short piece ends the phrase before it, and heads nothing
    assert pending.options[0].label in ("It means the relay is stuck closed",
                                        "The ECM is running the fan in a fail-safe mode"), pending.options[0].label
    assert not pending.options[1].label.startswith(("Left", "Not")), pending.options[1].label
    # an EDU that its next one goes on with is read to the phrase's end when that fits
    means = build_tree(("Joint", "NN", ["That uneven temperature means", "many tubes are blocked."]))
    pending = build_options([("rad#1", means.edus, means), ("fan#1", fan.edus, fan)], normalizer=NORM)
    assert pending.options[0].label == "That uneven temperature means many tubes are blocked"


def test_a_label_never_ends_where_the_next_edu_goes_on_with_its_phrase():
    """Found by trying the chat: "The usual causes are a cooling fan" was an option; its next EDU, "that isn't running
    with the AC on", goes on with the noun phrase it cut."""
    ac = build_tree(("Joint", "NN", [("Elaboration", "NS", ["The usual causes are a cooling fan",
                                                              "that isn't running with the AC on,"]),
                                     "or an overcharged system."]))
    # the other option shares what the relative clause adds (running, AC): only the cut EDU told them apart before
    fan = build_tree(("Joint", "NN", ["Run the engine with the AC on", "until the fan cycles on by itself."]))
    pending = build_options([("ac#1", ac.edus, ac), ("fan#1", fan.edus, fan)], normalizer=NORM)
    assert pending.options[0].label == "The usual causes are a cooling fan that isn't running with the AC on"


def test_a_reply_word_or_a_dangling_link_is_no_part_of_a_label():
    assert readable("Good, stopping early protects the head gasket.") == "Stopping early protects the head gasket"
    assert readable("Attach the ground terminal firmly, then") == "Attach the ground terminal firmly"
    assert readable("Check it, so") == "Check it" and readable("Wait and see") == "Wait and see"


def test_a_question_back_or_a_circumstance_goes_after_a_clause_that_names_a_fix():
    """"What does your battery read in the morning" (its "?" in the next EDU, "before you crank?") and "Since a
    corroded ground limits current" were offered as options beside answers that name a check."""
    ground = build_tree(("Joint", "NNNN", ["Start by checking the strap,",
                                          "since a corroded ground limits the current the starter motor draws.",
                                          "What does your battery voltage read on a cold winter morning",
                                          "before you crank?"]))
    # two sentences: the action and its reason, then the question back split over two EDUs
    edus = [replace(e, sentence=k) for e, k in zip(ground.edus, (0, 0, 1, 1))]
    fuel = build_tree(("Joint", "NN", ["Leaking injectors can also cause this.", "Check the fuel pressure hold."]))
    pending = build_options([("g#1", edus, ground), ("f#1", fuel.edus, fuel)], normalizer=NORM)
    assert pending.options[0].label == "Start by checking the strap", pending.options[0].label
