"""Picking a board's votes: the pieces of select_votes, against numpy's own set functions."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from arena_core.selection import _models_in

CODES = st.lists(st.integers(-1, 6), max_size=25).map(lambda c: np.array(c, dtype=np.int32))


@given(a=CODES, b=CODES)
def test_models_in_is_union1d(a, b):
    assert _models_in(a, b, 7).tolist() == np.union1d(a, b).tolist()
