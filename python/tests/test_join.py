"""Joins and graphs against brute force (NumPy) and SciPy's connected components."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

import simlsh
from conftest import popcount_distances, random_codes


@pytest.mark.parametrize("bits,radius", [(64, 0), (64, 3), (64, 9), (128, 5), (200, 30)])
def test_self_join_equals_all_pairs_brute_force(bits, radius):
    rng = np.random.default_rng(bits + radius)
    codes = random_codes(rng, 1500, bits, planted=500, flips=6)
    codes[10] = codes[11]  # identical rows pair at distance 0
    i, j, d = simlsh.self_join(codes, radius, bits=bits)
    assert i.dtype == np.int64 and j.dtype == np.int64 and d.dtype == np.int32
    dist = popcount_distances(codes, codes)
    ei, ej = np.nonzero(np.triu(dist <= radius, k=1))
    assert list(zip(i.tolist(), j.tolist())) == list(zip(ei.tolist(), ej.tolist()))
    np.testing.assert_array_equal(d, dist[ei, ej])
    assert simlsh.self_join(codes, radius, bits=bits, threads=1)[0].tolist() == i.tolist()


def test_clusters_equal_connected_components():
    rng = np.random.default_rng(3)
    codes = random_codes(rng, 2000, 64, planted=900, flips=5)
    i, j, _ = simlsh.self_join(codes, 5)
    labels = simlsh.clusters(len(codes), i, j)
    g = sp.coo_matrix((np.ones(len(i)), (i, j)), shape=(len(codes), len(codes)))
    n, comp = connected_components(g, directed=False)
    # Same partition, and each label is the smallest member of its component.
    assert len(np.unique(labels)) == n
    for c in range(n):
        members = np.flatnonzero(comp == c)
        assert np.all(labels[members] == members.min())
    with pytest.raises(ValueError, match="beyond n"):
        simlsh.clusters(3, [0], [5])


@pytest.mark.parametrize("index", [None, "mih", "linear"])
def test_knn_graph_equals_brute_force(index):
    rng = np.random.default_rng(9)
    codes = random_codes(rng, 800, 64, planted=300)
    idx = None
    if index is not None:
        idx = simlsh.Index(bits=64, spec=index)
        idx.add(codes)
    D, I = simlsh.knn_graph(codes, 5, index=idx)
    dist = popcount_distances(codes, codes).astype(np.int64)
    np.fill_diagonal(dist, 1 << 40)  # a row is not its own neighbour
    for r in range(len(codes)):
        order = np.lexsort((np.arange(len(codes)), dist[r]))[:5]
        assert I[r].tolist() == order.tolist()
        assert D[r].tolist() == dist[r, order].tolist()


def test_knn_graph_defaults_are_the_librarys():
    """knn_graph states no default of its own: leaving ``method`` or ``seed`` out gives the
    graph of the library's defaults (``_simlsh.defaults()``) passed explicitly, and the
    docstring quotes those values."""
    from simlsh import _simlsh

    d = _simlsh.defaults()
    method, seed = d["knn_method"], d["knn_seed"]
    assert (method, seed) == ("exact", 0)
    rng = np.random.default_rng(12)
    codes = random_codes(rng, 1500, 128, planted=300, flips=6)
    codes[:3] = 0  # featureless rows: the path that joins the other rows only
    for featureless in ("zero", None):
        pairs = [
            (simlsh.knn_graph(codes, 6, featureless=featureless),
             simlsh.knn_graph(codes, 6, method=method, seed=seed, featureless=featureless)),
            (simlsh.knn_graph(codes, 6, method="approx", featureless=featureless),
             simlsh.knn_graph(codes, 6, method="approx", seed=seed, featureless=featureless)),
        ]
        for omitted, explicit in pairs:
            for a, b in zip(omitted, explicit):
                np.testing.assert_array_equal(a, b)
    # The approximate graph depends on the seed, so the comparison above can tell.
    other = simlsh.knn_graph(codes, 6, method="approx", seed=seed + 1)
    assert not np.array_equal(other[1], pairs[1][0][1])
    idx = simlsh.LinearScan(bits=128)
    idx.add(codes)
    for a, b in zip(simlsh.knn_graph(codes, 6, index=idx), simlsh.knn_graph(codes, 6, index=idx, method=method)):
        np.testing.assert_array_equal(a, b)
    doc = " ".join(simlsh.knn_graph.__doc__.split())
    assert f"(default the library's, {method})" in doc and f"(default the library's, {seed})" in doc


def test_featureless_rows_are_left_out_as_brute_force_does():
    """Every way of naming the rows without features (the all-zero rule, a mask, row numbers
    in any order with repeats) leaves the same rows out of the self-join, the banded join and
    the k-NN graph, as NumPy's brute force over the other rows; ``False``/None/``[]`` name
    none, and a bad row is a ValueError naming it."""
    rng = np.random.default_rng(21)
    n, radius, k = 300, 12, 4
    codes = random_codes(rng, n, 64, planted=150, flips=4)
    zero = [5, 17, 40, 41, 299]
    codes[zero] = 0  # all-zero rows: at distance 0 from each other
    named = [3, 17, 250]  # rows with features named featureless
    mask = np.zeros(n, bool)
    mask[named] = True
    dist = popcount_distances(codes, codes).astype(np.int64)
    bands = [(codes[:, 0] >> np.uint64(16 * b)) & np.uint64(0xFFFF) for b in range(4)]
    agree = np.any([kb[:, None] == kb[None, :] for kb in bands], axis=0)

    def oracle(out):
        keep = np.ones(n, bool)
        keep[list(out)] = False
        both = np.triu(keep[:, None] & keep[None, :], k=1)
        sj = np.nonzero(both & (dist <= radius))
        bj = np.nonzero(both & agree)
        d = np.where(keep[None, :] & ~np.eye(n, dtype=bool), dist, 1 << 40)
        I = np.full((n, k), -1)
        D = np.full((n, k), 2**31 - 1)
        for r in np.flatnonzero(keep):
            order = np.lexsort((np.arange(n), d[r]))[:k]
            order = order[d[r, order] < 1 << 40]
            I[r, : len(order)], D[r, : len(order)] = order, d[r, order]
        return sj, bj, (D, I)

    cases = [("zero", zero), (mask, named), (named, named), ([250, 3, 17, 3, 250], named),
             (np.array(named, np.uint32), named), (False, []), (None, []), ([], [])]
    for featureless, out in cases:
        (si, sj), (bi, bj), (D, I) = oracle(out)
        i, j, d = simlsh.self_join(codes, radius, featureless=featureless)
        assert (i.tolist(), j.tolist(), d.tolist()) == (si.tolist(), sj.tolist(), dist[si, sj].tolist())
        i, j, d = simlsh.banded_join(codes, bands=4, width=16, featureless=featureless)
        assert (i.tolist(), j.tolist(), d.tolist()) == (bi.tolist(), bj.tolist(), dist[bi, bj].tolist())
        got = simlsh.knn_graph(codes, k, featureless=featureless)
        np.testing.assert_array_equal(got[0], D)
        np.testing.assert_array_equal(got[1], I)
    # The default is the all-zero rule.
    assert simlsh.self_join(codes, radius)[0].tolist() == oracle(zero)[0][0].tolist()
    for bad, says in ((n, f"row {n} beyond the {n} rows"), (-1, "-1"), (2**40, str(2**40))):
        for join in (lambda f: simlsh.self_join(codes, radius, featureless=f),
                     lambda f: simlsh.banded_join(codes, bands=4, width=16, featureless=f),
                     lambda f: simlsh.knn_graph(codes, k, featureless=f)):
            with pytest.raises(ValueError, match=says):
                join([1, bad])
    # A uint64 row number beyond int64 is named as given, not as its int64 wrap.
    with pytest.raises(ValueError, match=str(2**63 + 1)):
        simlsh.self_join(codes, radius, featureless=np.array([1, 2**63 + 1], np.uint64))
    for bad, says in (("zeros", "'zeros'"), ([1.5], "row numbers"), (mask[:-1], "entries for 300 rows")):
        with pytest.raises(ValueError, match=says):
            simlsh.self_join(codes, radius, featureless=bad)
