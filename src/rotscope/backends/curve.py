"""A scripted accuracy curve with a known truth: the chance that instance ``i`` is answered right
at length ``L`` is ``sigmoid(slope · ln(midpoint / L) + u_i)``, where ``u_i`` is the
instance's own random effect (normal, ``spread``), drawn from a hash of the seed and the instance
key. Each call is then right or wrong by a hash of the seed, the instance, the length and the
depth, so the same prompt always gets the same answer and a run can be resumed.

The true score at a length is the mean over the random effect (Gauss-Hermite quadrature), and the
true effective length (``effective_length``) the longest length whose score is at least a fraction
of the score at the base length: what a search on ``fake/curve-MIDPOINT`` must bracket.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(40)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def uniform(*parts: object) -> float:
    """A number in (0, 1) fixed by ``parts``."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2**64


@dataclass(frozen=True)
class LogisticCurve:
    midpoint: float
    """The length where an instance without random effect is right half of the time."""
    slope: float = 4.0
    spread: float = 1.0
    seed: int = 0

    def effect(self, instance: str) -> float:
        """The instance's random effect ``u_i``."""
        return self.spread * NormalDist().inv_cdf(uniform(self.seed, "effect", instance))

    def chance(self, instance: str, length: float) -> float:
        z = self.slope * math.log(self.midpoint / length) + self.effect(instance)
        return 1.0 / (1.0 + math.exp(-z))

    def correct(self, instance: str, length: int, depth: object) -> bool:
        """Whether the call at this instance, length and depth is answered right."""
        return uniform(self.seed, "call", instance, length, depth) < self.chance(instance, length)

    def score(self, length: float) -> float:
        """The true score at ``length``: the chance averaged over the random effect."""
        z = self.slope * math.log(self.midpoint / length) + self.spread * _NODES
        return float(np.sum(_WEIGHTS / (1.0 + np.exp(-z))))

    def effective_length(self, base_length: float, fraction: float) -> float:
        """The length where the true score falls to ``fraction`` × the score at ``base_length``."""
        wanted = fraction * self.score(base_length)
        low, high = math.log(base_length), math.log(self.midpoint) + 20.0 / self.slope
        for _ in range(80):
            middle = (low + high) / 2
            low, high = (middle, high) if self.score(math.exp(middle)) >= wanted else (low, middle)
        return math.exp(low)
