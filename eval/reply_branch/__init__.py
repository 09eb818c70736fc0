"""How well the engine reads a customer's reply to its yes/no question (``dtdialog.understanding.reply_branch``).

``judged_polarity.jsonl`` holds every built-in dialogue's reply to an answer that closes with a yes/no question, each
judged by reading: ``yes``, ``no`` or ``unclear``. Guidelines: judge what the customer says about the thing asked,
as the mechanic who asked would take it ("The oil looks normal" to "Have you checked the oil for a milky color?" is
``unclear``: checked, and not milky); a reply that answers a part of a joined question answers that part; a reply
that only names a result ("much lower than specified" to "Does the boost reach the specified value?") answers it.
"""
