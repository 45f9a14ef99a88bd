"""Purpose-separated streams: the uint32 fast path draws exactly what SeedSequence makes of the list."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fedrepro.core.rng import PURPOSES, _purpose_word, stream

WORD = st.integers(min_value=0, max_value=2 ** 32 - 1)
BIG = st.integers(min_value=0, max_value=2 ** 70)


def _reference(seed, purpose, *keys):
    entropy = [int(seed), _purpose_word(purpose), *[int(k) for k in keys]]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))


@settings(max_examples=200, deadline=None)
@given(seed=WORD, purpose=st.sampled_from(PURPOSES), keys=st.lists(st.one_of(WORD, BIG), max_size=4))
def test_stream_draws_what_the_list_entropy_draws(seed, purpose, keys):
    ours = stream(seed, purpose, *keys).integers(0, 2 ** 63, size=4)
    ref = _reference(seed, purpose, *keys).integers(0, 2 ** 63, size=4)
    np.testing.assert_array_equal(ours, ref)


def test_edge_words_and_numpy_integer_keys():
    for keys in [(0,), (2 ** 32 - 1,), (2 ** 32,), (np.int64(7), np.uint32(0)), ()]:
        np.testing.assert_array_equal(stream(5, "minibatch", *keys).random(3),
                                      _reference(5, "minibatch", *keys).random(3))


def test_purposes_and_keys_separate_streams():
    draws = {(p, k): stream(1, p, k).random() for p in PURPOSES[:4] for k in (0, 1)}
    assert len(set(draws.values())) == len(draws)


def test_bad_purpose_or_negative_key_is_refused():
    with pytest.raises(ValueError, match="unknown random-stream purpose"):
        stream(0, "minibtach")
    with pytest.raises(ValueError, match="non-negative"):
        stream(0, "minibatch", -1)
    with pytest.raises(ValueError, match="non-negative"):
        stream(-3, "minibatch")
