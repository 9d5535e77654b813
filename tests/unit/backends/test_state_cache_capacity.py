"""The engine's RAM cache of saved states keeps within ``llamacpp.state_cache_mb`` counting all a
saved state holds (llama.cpp's state and the logits and token ids copied beside it), not only
llama.cpp's part as llama-cpp-python's own cache does."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from rotscope.backends.llamacpp.backend import state_cache

MIB = 1 << 20


def saved_state(state_mib: int, logits_mib: int) -> SimpleNamespace:
    """What ``Llama.save_state`` returns, in the fields the cache reads."""
    return SimpleNamespace(
        llama_state_size=state_mib * MIB,
        scores=np.zeros(logits_mib * MIB // 4, dtype=np.float32),
        input_ids=np.zeros(8, dtype=np.intc),
    )


def test_states_are_evicted_when_their_logits_pass_the_capacity() -> None:
    cache = state_cache(100)
    for key in range(3):
        cache[(key,)] = saved_state(state_mib=6, logits_mib=48)  # 54 MiB each, 6 of them llama.cpp's
    # llama-cpp-python's count (18 MiB) would keep all three; the whole of them is 162 MiB.
    assert list(cache.cache_state) == [(2,)]
    assert cache.cache_size <= 100 * MIB
    assert cache[(2, 5)] is cache.cache_state[(2,)]  # still found by its longest prefix
