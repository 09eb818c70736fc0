"""Courtesy in a customer's question: greetings, thanks and well-wishes are no part of the problem.

"Hi everyone, hope you're all well. ... Thanks in advance!" put an Attribution "hope you're all well" among the parts an
answer had to address, and "hope", "well" and "thank" among the search words. ``without_courtesy`` leaves out the
sentences that are courtesy alone and a greeting that opens a sentence, so DT-Q is built from the problem as told.
The formulas are English conversation, not domain vocabulary: an index of another domain is read the same way.
"""

from __future__ import annotations

import re

from index.vocabulary import SENTENCE_BREAK, content_words, words_of

#: a greeting that opens a sentence ("Hi everyone,", "Hello there -", "Hey guys")
_GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|hiya|howdy|greetings|good (?:morning|afternoon|evening))"
    r"(?:\s+(?:all|everyone|everybody|guys|folks|there|team|friends|people|y'all|all of you))?\s*(?:[,.!:;-]+\s*|\s+|$)",
    re.IGNORECASE)
_HELP = r"(?:help|advice|input|ideas|replies|answers|suggestions|tips|info|information|insight|time)"
#: a sentence that is courtesy alone, read lower-cased without its closing punctuation
_COURTESY = re.compile(
    r"(?:i )?hope (?:you(?:'re| are)|everyone(?:'s| is)|y'all are|you guys are)(?: all)?(?: doing)? "
    r"(?:well|good|great|fine|ok|okay)"
    rf"|(?:(?:many|big|huge) )?thanks?(?: you)?(?: so much| very much| a lot)?(?: in advance)?"
    rf"(?: for (?:any|your|the|all|all the|any and all) (?:\w+ )?{_HELP})?(?: guys| all| everyone| folks)?"
    rf"|(?:any|all) (?:\w+ )?{_HELP}(?: (?:is|are|would be|will be))?(?: (?:greatly|much|really|very much|hugely))? "
    r"appreciated"
    rf"|(?:i |i'd |i would )?(?:really |greatly )?appreciate (?:it|any|your|all)(?: {_HELP})?"
    r"|(?:i )?hope (?:someone|somebody|anyone|you|you guys|one of you) can help(?: me)?(?: out)?"
    r"|(?:can|could) (?:anyone|someone|somebody|you) (?:please )?help(?: me)?(?: out)?(?: please)?"
    r"|cheers|regards|best regards|kind regards|tia|thx|ty|much appreciated"
    r"|sorry for the (?:long|wall of text|essay|length)(?: post| read| message)?"
    r"|long time lurker(?:,? first time poster)?|first time poster")


def without_courtesy(text: str) -> str:
    """Return ``text`` without its courtesy sentences and opening greetings; ``text`` itself when nothing else is left
    (a message that is courtesy alone is the intents' to read, not the search's)."""
    kept = []
    for sentence in SENTENCE_BREAK.split(text.strip()):
        core = _GREETING.sub("", sentence, count=1)
        if _COURTESY.fullmatch(core.strip().rstrip(".!?,;:) ").lower()):
            continue
        if core.strip():
            kept.append(core[:1].upper() + core[1:] if core is not sentence else core)
    out = " ".join(kept).strip()
    return out if content_words(words_of(out)) else text
