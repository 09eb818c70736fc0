"""Choosing the answer: the selector, rhetorical agreement, scoring, confidence, abstention, clarification."""
