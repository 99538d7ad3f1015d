"""The vectorized keyed hash equals pandas' hash of the numbers' bytes, for every number and key."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.tasks.core.siphash import keyed_hashes

# numbers of every byte length (numpy drops trailing zero bytes: a short number is a short message), and repeats
numbers = st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 8).map(lambda b: (1 << (8 * b)) - 1 if b else 0),
                    st.integers(0, 7).map(lambda b: 1 << (8 * b + 7)))


@settings(max_examples=200, deadline=None)
@given(values=st.lists(numbers, max_size=40),
       key=st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=16, max_size=16))
def test_keyed_hashes_equal_pandas(values, key):
    x = np.array(values, dtype=np.uint64)
    expected = pd.util.hash_pandas_object(pd.Series(x.view("S8")), index=False, hash_key=key).to_numpy()
    assert keyed_hashes(x, key).tolist() == expected.tolist()
    assert keyed_hashes(x.view(np.int64), key).tolist() == expected.tolist()  # any 64-bit dtype, by its bytes


def test_a_wrong_key_is_refused_without_showing_it():
    with pytest.raises(ValueError, match="16 bytes in UTF-8, not 6") as err:
        keyed_hashes(np.arange(3, dtype=np.uint64), "secret")
    assert "secret" not in str(err.value)
