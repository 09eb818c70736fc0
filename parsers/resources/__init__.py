"""Data files shipped with the parsers (the cue lexicon)."""
