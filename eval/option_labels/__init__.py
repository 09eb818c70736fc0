"""Clarification labels, judged by reading: ``python -m eval.option_labels``.

Every run of three consecutive answers of the built-in index (in id order: mostly one topic, often one dialogue) is
offered as a clarification, as the engine offers its top three, and each option's label is recorded. With
``--before LABELS.json`` (the ``labels.json`` a run on another checkout wrote) the labels that differ are listed,
with the verdict ``judged_changes.jsonl`` holds for each change judged by reading.

Guidelines for a verdict, judging the label alone, as the customer sees it:
``better`` when the new label is a whole clause or noun phrase that names a fix, cause or check and the old one began
or ended inside a phrase ("Closed or the ECM is running ..." -> "The ECM is running the fan in a fail-safe mode"), or
when the new one completes the old ("Route the new belt" -> "... using the diagram on the underside of the hood");
``worse`` for the reverse; ``same`` when both are whole (another clause of the same answer) or both are pieces.
"""
