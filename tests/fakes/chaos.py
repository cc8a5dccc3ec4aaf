"""Fault injection at random for the local stand-ins (``FakeGitHub.chaos``, ``FakeLLM.chaos``).

The draw for a request depends only on the seed, the request's identity (a route, or a hash of
a chat request's messages) and how many times that identity was asked before, never on the
order in which concurrent requests arrive: the same seed injects the same faults into the same
requests however the client interleaves them, so a chaos test is deterministic although its
stage runs requests concurrently. The faults injected are counted per kind (``injected``).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Chaos:
    """Fail about ``rate`` of the requests, with a kind drawn evenly from ``kinds``."""

    rate: float
    seed: int
    kinds: tuple[str, ...]
    injected: Counter[str] = field(default_factory=Counter)  # kind -> faults injected
    requests: int = 0  # requests seen while chaos was on
    _asked: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate must be within 0..1, got {self.rate}")
        if not self.kinds:
            raise ValueError("chaos needs at least one kind of fault")

    def draw(self, identity: str) -> tuple[str | None, random.Random]:
        """The fault for this request (None: answer normally) and a generator for its details
        (which 5xx, ...), both fixed by the seed, ``identity`` and its repeat count."""
        with self._lock:
            repeat = self._asked[identity]
            self._asked[identity] += 1
            self.requests += 1
        rng = random.Random(f"{self.seed}\0{identity}\0{repeat}")
        if rng.random() >= self.rate:
            return None, rng
        kind = rng.choice(self.kinds)
        with self._lock:
            self.injected[kind] += 1
        return kind, rng

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self.injected.values())
