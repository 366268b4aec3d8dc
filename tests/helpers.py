"""Helpers the test modules share: random labelled data (hypothesis) and the data checks metrics need."""
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays


def break_copies(T, A):
    "T with one row flipped in every column that copies a group column (metrics refuse such copies)."
    T = T.copy()
    for t in range(T.shape[1]):
        if any((T[:, t] == A[:, a]).all() for a in range(A.shape[1])): T[0, t] ^= 1
    return T


@st.composite
def labelled(draw, max_rows=60, max_tasks=6, max_groups=3):
    "Random (T, A, T_pred, A_pred) with one-hot groups and every group present."
    n = draw(st.integers(4, max_rows))
    kt, ka = draw(st.integers(1, max_tasks)), draw(st.integers(2, max_groups))
    T = draw(arrays(np.int8, (n, kt), elements=st.integers(0, 1)))
    Tp = draw(arrays(np.int8, (n, kt), elements=st.integers(0, 1)))
    g = draw(arrays(np.int64, n, elements=st.integers(0, ka - 1)))
    g[:ka] = np.arange(ka)  # no empty group
    gp = draw(arrays(np.int64, n, elements=st.integers(0, ka - 1)))
    eye = np.eye(ka, dtype=np.int8)
    return break_copies(T, eye[g]), eye[g], Tp, eye[gp]
