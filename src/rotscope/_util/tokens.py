"""Token id sequences."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    size = min(len(a), len(b))
    differ = np.flatnonzero(np.asarray(a[:size], dtype=np.int64) != np.asarray(b[:size], dtype=np.int64))
    return int(differ[0]) if differ.size else size
