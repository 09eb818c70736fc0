"""Simulated-customer dialogue evaluation of the dialogue manager against next-result baselines (``cli``)."""
