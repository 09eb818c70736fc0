"""The redundant-advice benchmark: does the first answer repeat what the customer already did?

Real car questions in which the customer says what they already did or checked, each with up to 10 candidate answers
judged by reading (``docs/already_tried.md`` has the guidelines). Each method ranks each question's candidates; the
report gives the share of questions whose first answer repeats a tried action, and the share whose first answer is
relevant and new, with bootstrap CIs and paired differences against dense retrieval.

``python -m eval.already_tried`` runs it on the shipped judgments (texts read from the shared data in place);
``--data FILE`` runs it on a self-contained JSONL file of your own (``gold.load_gold_file``).
"""
