"""The fixed, seeded split of the shared Reddit car posts: the held-out half is never used to write the corpus."""

from __future__ import annotations

import hashlib

SEED = 13


def held_out(post_id: str) -> bool:
    """Return True for a post of the held-out half (the coverage test), False for the half the map is drawn from."""
    return int(hashlib.sha1(f"{SEED}:{post_id}".encode()).hexdigest(), 16) % 2 == 0
