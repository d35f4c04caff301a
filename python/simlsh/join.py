"""Joins and graphs over signatures: the all-pairs self-join, connected components, the k-NN
graph.

>>> import numpy as np, simlsh
>>> codes = np.array([[0b0111], [0b0001], [0b0111], [2**64 - 1]], dtype=np.uint64)
>>> i, j, d = simlsh.self_join(codes, radius=2)
>>> list(zip(i.tolist(), j.tolist(), d.tolist()))
[(0, 1, 2), (0, 2, 0), (1, 2, 2)]
>>> simlsh.clusters(len(codes), i, j).tolist()
[0, 0, 0, 3]
"""

from __future__ import annotations

import numpy as np

from . import _simlsh
from ._codes import as_codes, as_ids

__all__ = ["self_join", "clusters", "knn_graph"]


def self_join(codes, radius: int, *, bits: int | None = None, threads: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every unordered pair of rows of ``codes`` within Hamming distance ``radius``
    (inclusive), each exactly once: ``(i, j, distance)`` arrays (``int64``, ``int64``,
    ``int32``) with ``i < j``, sorted by ``(i, j)``. Exact for any radius (Manku's permuted
    tables built for the join; all pairs compared when the radius is near ``bits / 2``).
    ``bits`` defaults to ``64 * words``; it only matters for checking that no bit beyond it
    is set."""
    codes, bits = as_codes(codes, bits)
    if isinstance(radius, bool) or not isinstance(radius, (int, np.integer)) or not 0 <= radius < 2**32:
        raise ValueError(f"radius must be an integer in 0..2^32, got {radius!r}")
    return _simlsh.self_join(codes, bits, int(radius), threads=threads)


def clusters(n: int, i, j) -> np.ndarray:
    """Connected components of the graph on ``0..n`` with edges ``(i[k], j[k])`` (e.g. from
    :func:`self_join`): ``labels`` (``int64``, length ``n``), ``labels[v]`` the smallest member
    of ``v``'s component, so that labels do not depend on the order of the edges."""
    i, j = as_ids(i, name="i"), as_ids(j, name="j")
    return _simlsh.clusters(int(n), i, j)


def knn_graph(codes, k: int, *, index=None, bits: int | None = None, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The k-nearest-neighbour graph of the rows of ``codes``: ``(D, I)``, ``(N, k)`` arrays of
    each row's ``k`` nearest *other* rows sorted by ``(distance, id)`` (ties by the smaller
    id; id -1 and distance ``2**31 - 1`` where fewer exist). Exact by the linear scan
    (``O(N^2)``), or answered by ``index`` (a :class:`simlsh.Index` holding row ``i`` under
    id ``i``, e.g. ``MultiIndex`` for close neighbours)."""
    if index is not None:
        bits = index.bits if bits is None else bits
    codes, bits = as_codes(codes, bits)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    core = index._core if index is not None else None
    return _simlsh.knn_graph(codes, bits, int(k), index=core, threads=threads)
