"""The banded join, the verified (exact-cosine) join and the distributed banded join's
per-partition pieces, against brute force."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp

import simlsh
from simlsh import arrow
from conftest import popcount_distances, random_codes


def band_agree(codes: np.ndarray, bands: int, width: int) -> np.ndarray:
    """Pairs (i < j) agreeing on all bits of some band: brute force over bit arrays."""
    bits = np.unpackbits(codes.view(np.uint8), axis=1, bitorder="little")
    n = len(codes)
    agree = np.zeros((n, n), dtype=bool)
    for b in range(bands):
        key = bits[:, b * width : (b + 1) * width]
        agree |= (key[:, None, :] == key[None, :, :]).all(axis=2)
    return np.triu(agree, k=1)


@pytest.mark.parametrize("max_distance,prefix", [(None, None), (60, None), (60, 22), (None, 18)])
def test_banded_join_equals_brute_force(max_distance, prefix):
    rng = np.random.default_rng(1)
    codes = random_codes(rng, 700, 128, planted=300, flips=40)
    want = band_agree(codes, 8, 16)
    dist = popcount_distances(codes, codes)
    if max_distance is not None:
        want &= dist <= max_distance
    kw = {}
    if prefix is not None:
        # The prefix filter: the first 64-bit word within `prefix`.
        want &= popcount_distances(codes[:, :1], codes[:, :1]) <= prefix
        kw = dict(prefix_words=1, prefix_radius=prefix)
    ei, ej = np.nonzero(want)
    i, j, d, stats = simlsh.banded_join(
        codes, bands=8, width=16, max_distance=max_distance, return_stats=True, **kw
    )
    assert list(zip(i.tolist(), j.tolist())) == list(zip(ei.tolist(), ej.tolist()))
    np.testing.assert_array_equal(d, dist[ei, ej])
    assert stats["candidates"] == len(i) and stats["capped"] == []


def test_planned_wide_bandings_carry_their_prefix_filter_to_the_key_scheme():
    # 1024-bit signatures: the planner's banding checks the first 4 words first; the
    # distributed key scheme rebuilt from its description keeps the filter.
    plan = simlsh._simlsh.plan_join(0.8, 0.99, 1024, 1_000_000)
    assert plan["kind"] == "bands" and plan["prefix_words"] == 4
    assert 0 < plan["prefix_radius"] < 128
    from simlsh import spark

    scheme = spark.key_scheme(0.8, bits=1024, rows=1_000_000)
    desc = scheme.describe()
    assert (desc["prefix_words"], desc["prefix_radius"]) == (4, plan["prefix_radius"])
    again = spark._scheme(spark._scheme_args(desc)).describe()
    assert again == desc
    assert simlsh._simlsh.plan_join(0.8, 0.99, 256, 1_000_000)["prefix_words"] is None
    with pytest.raises(ValueError, match="go together"):
        simlsh._simlsh.KeyScheme.bands(1024, 4, 8, None, None, 4, None)


def test_verified_join_of_dense_vectors_equals_exact_cosine():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((600, 24)).astype(np.float32)
    X[300:] = X[:300] + 0.3 * rng.standard_normal((300, 24)).astype(np.float32)
    X[5] = 0  # a zero row: never paired, reported
    codes = simlsh.HyperplaneSigner(dim=24, bits=128, seed=3).sign(X)
    unit = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-30)
    cos = unit @ unit.T
    exact = np.triu(cos >= 0.9, k=1)
    exact[5, :] = exact[:, 5] = False
    # Every pair a candidate (radius = bits): the exact answer.
    i, j, d, c, rep = simlsh.verified_join(codes, X, 0.9, radius=128, return_report=True)
    ei, ej = np.nonzero(exact)
    assert list(zip(i.tolist(), j.tolist())) == list(zip(ei.tolist(), ej.tolist()))
    np.testing.assert_allclose(c, cos[ei, ej], rtol=1e-5)
    assert rep["zero_rows"].tolist() == [5] and rep["pairs"] == len(i)
    # A radius: exactly the exact pairs within it.
    dist = popcount_distances(codes, codes)
    i, j, d, c = simlsh.verified_join(codes, X, 0.9, radius=20)
    ei, ej = np.nonzero(exact & (dist <= 20))
    assert list(zip(i.tolist(), j.tolist())) == list(zip(ei.tolist(), ej.tolist()))
    # The planner's choice: a subset of the exact answer with the planned recall (0.99 at
    # the threshold, more above it), every reported cosine exact.
    i, j, d, c, rep = simlsh.verified_join(codes, X, 0.9, recall=0.99, return_report=True)
    assert exact[i, j].all() and len(i) >= 0.95 * exact.sum()
    np.testing.assert_allclose(c, cos[i, j], rtol=1e-5)
    # Banded candidates.
    i, j, d, c = simlsh.verified_join(codes, X, 0.9, bands=16, width=8)
    agree = band_agree(codes, 16, 8)
    ei, ej = np.nonzero(exact & agree)
    assert list(zip(i.tolist(), j.tolist())) == list(zip(ei.tolist(), ej.tolist()))


def test_verified_join_of_sparse_rows_equals_exact_cosine(tweets):
    from sklearn.feature_extraction.text import TfidfVectorizer

    X = TfidfVectorizer().fit_transform(tweets[:1500]).astype(np.float32)
    X.sort_indices()
    codes = simlsh.HashingTrick(bits=256, seed=1).sign(X)
    i, j, d, c = simlsh.verified_join(codes, X, 0.7, radius=256)
    cos = (X @ X.T).toarray()  # rows are l2-normalised
    ei, ej = np.nonzero(np.triu(cos >= 0.7, k=1) & (np.asarray(X.getnnz(axis=1))[:, None] > 0))
    assert list(zip(i.tolist(), j.tolist())) == list(zip(ei.tolist(), ej.tolist()))
    np.testing.assert_allclose(c, cos[ei, ej], rtol=1e-5)
    with pytest.raises(TypeError, match="float32 CSR"):
        simlsh.verified_join(codes, X.astype(np.float64), 0.7)
    U = X.copy()
    U.indices[U.indptr[0] : U.indptr[1]] = U.indices[U.indptr[0] : U.indptr[1]][::-1].copy()
    if U.indptr[1] - U.indptr[0] > 1:
        with pytest.raises(ValueError, match="sorted sparse indices"):
            simlsh.verified_join(codes, U, 0.7, radius=10)


@pytest.mark.parametrize("partitions", [1, 3, 8])
def test_distributed_banded_join_equals_the_banded_join(partitions):
    """band_keys, a shuffle by (band, key) into partitions, band_pairs per partition: the
    union is the banded join's pairs (by id), each exactly once, for any partitioning."""
    rng = np.random.default_rng(partitions)
    codes = random_codes(rng, 2000, 128, planted=600, flips=20)
    ids = rng.choice(10**12, len(codes), replace=False).astype(np.int64)
    batch = pa.record_batch({"id": ids, "fp": arrow.codes_to_arrow(codes)})
    keys = arrow.band_keys(batch, bands=8, width=16)
    assert keys.num_rows == 8 * len(codes) and keys.schema.names == ["band", "key", "id", "fp"]
    band = keys.column("band").to_numpy()
    key = keys.column("key").to_numpy()
    part = (band.astype(np.int64) * 1_000_003 + key) % partitions
    found = []
    for p in range(partitions):
        out = arrow.band_pairs(keys.filter(pa.array(part == p)), bands=8, width=16, max_distance=50)
        found += list(zip(out.column("a").to_pylist(), out.column("b").to_pylist(), out.column("dist").to_pylist()))
    i, j, d = simlsh.banded_join(codes, bands=8, width=16, max_distance=50)
    a, b = np.minimum(ids[i], ids[j]), np.maximum(ids[i], ids[j])
    want = sorted(zip(a.tolist(), b.tolist(), d.tolist()))
    assert sorted(found) == want and len(found) == len(set(found))
