"""Coverage of the built-in car-repair corpus against what real people ask.

``python -m eval.coverage``: how the bot handles a file of real questions (answered, clarified, abstained on,
refused), with a seeded sample for judging by reading. ``python -m eval.coverage.topics``: the topic map of the
shared Reddit car posts and mechanics questions that the corpus is grown from; a fixed, seeded half of the Reddit
posts is held out of it (``split.held_out``) and serves as the coverage test.
"""
