"""The dialogue: the units ``dtdialog.dialogue.manager.DialogueManager`` runs a turn with, and the policies they consult.

The policies (``clarify``, ``abstain``, ``reject``, ``handoff``) decide and return their decision; the turn's units
(``handlers``, ``opening``, ``steps``, ``choice``, ``none_fit``, ``outcomes``, ``memory``) apply it to the session.
"""
