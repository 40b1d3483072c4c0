"""Seeded random gates: source bubbles (tvalid low) and sink backpressure (tready low)."""
from __future__ import annotations

import random


class Gate:
    """``next()`` is True when the interface may act this cycle.

    ``p`` is the probability of True; 1.0 never stalls.  Bursty stalls are produced
    by holding a drawn state for 1..``max_run`` cycles, which exercises both isolated
    bubbles and long stalls with one knob."""

    def __init__(self, seed: int, p: float = 1.0, max_run: int = 4):
        if not 0.0 < p <= 1.0:
            raise ValueError(f"gate probability p must be in (0, 1], got {p}")
        if max_run < 1:
            raise ValueError(f"max_run must be >= 1, got {max_run}")
        self.rng = random.Random(seed)
        self.p = p
        self.max_run = max_run
        self._state = True
        self._left = 0

    def next(self) -> bool:
        if self.p >= 1.0:
            return True
        if self._left == 0:
            self._state = self.rng.random() < self.p
            self._left = self.rng.randint(1, self.max_run)
        self._left -= 1
        return self._state


def always() -> Gate:
    return Gate(0, 1.0)
