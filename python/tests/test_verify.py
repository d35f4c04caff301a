"""The banded join, the verified (exact-cosine) join and the distributed banded join's
per-partition pieces, against brute force."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

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
        kw = dict(prefix=(1, prefix))
    ei, ej = np.nonzero(want)
    i, j, d, stats = simlsh.banded_join(
        codes, bands=8, width=16, max_distance=max_distance, return_stats=True, **kw
    )
    assert list(zip(i.tolist(), j.tolist())) == list(zip(ei.tolist(), ej.tolist()))
    np.testing.assert_array_equal(d, dist[ei, ej])
    assert stats["candidates"] == len(i) and stats["capped"] == []


def test_planned_wide_bandings_carry_their_prefix_filter_in_the_scheme():
    # 1024-bit signatures: the planner's banding checks the first 4 words first; the scheme's
    # text form (what executors and files receive) keeps the filter, and so does pickling.
    import pickle

    plan = simlsh.plan_join(0.8, rows=1_000_000, bits=1024)
    scheme = plan["scheme"]
    assert plan["choice"] == "bands" and scheme.kind == "bands" and scheme.bits == 1024
    text = str(scheme)
    assert ",prefix=4/" in text
    radius = int(text.split(",prefix=4/")[1].split(",")[0])
    assert 0 < radius < 128
    assert simlsh.Scheme(text) == scheme and pickle.loads(pickle.dumps(scheme)) == scheme
    assert scheme.recall(0.8, 1024) == pytest.approx(plan["recall"]) and plan["recall"] >= 0.99
    assert "prefix" not in str(simlsh.plan_join(0.8, rows=1_000_000, bits=256)["scheme"])
    with pytest.raises(ValueError, match="prefix"):
        simlsh.Scheme("bands:f=1024,b=4,w=8,prefix=4")
    with pytest.raises(ValueError, match="give bits"):
        simlsh.plan_join(0.8, rows=10)


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
    i, j, d, c = simlsh.verified_join(codes, X, 0.9, scheme="bands:f=128,b=16,w=8")
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
@pytest.mark.parametrize("text", ["bands:f=128,b=8,w=16,d=50,cap=40", "tables:f=128,r=9,levels=10"])
def test_distributed_join_equals_the_single_machine_join(partitions, text):
    """scheme_keys, a shuffle by (g, key) into partitions, scheme_pairs per partition (a second
    pass for the runs capped anywhere): the union is the single-machine join's pairs (by id),
    each exactly once, for any partitioning."""
    rng = np.random.default_rng(partitions)
    codes = random_codes(rng, 2000, 128, planted=600, flips=20)
    codes[:60] = codes[0]  # a hot key: one run longer than the banding's cap
    ids = rng.choice(10**12, len(codes), replace=False).astype(np.int64)
    batch = pa.record_batch({"id": ids, "fp": arrow.codes_to_arrow(codes)})
    scheme = simlsh.Scheme(text)
    keys = arrow.scheme_keys(batch, scheme)
    assert keys.num_rows == scheme.groups * len(codes) and keys.schema.names == ["g", "key", "id", "fp"]
    g = keys.column("g").to_numpy()
    key = keys.column("key").to_numpy()
    part = (g.astype(np.int64) * 1_000_003 + key) % partitions
    found, capped = [], []
    for p in range(partitions):
        pairs, caps = arrow.scheme_pairs(keys.filter(pa.array(part == p)), scheme)
        found += list(zip(*(pairs.column(c).to_pylist() for c in ("a", "b", "distance"))))
        capped.append(caps)
    capped = pa.Table.from_batches(capped)
    if capped.num_rows:
        for p in range(partitions):
            pairs, _ = arrow.scheme_pairs(keys.filter(pa.array(part == p)), scheme, capped=capped, missed=True)
            found += list(zip(*(pairs.column(c).to_pylist() for c in ("a", "b", "distance"))))
    if scheme.kind == "bands":
        i, j, d, stats = simlsh.banded_join(codes, scheme, return_stats=True)
        assert capped.num_rows == len(stats["capped"]) > 0
    else:
        i, j, d = simlsh.self_join(codes, 9)
    a, b = np.minimum(ids[i], ids[j]), np.maximum(ids[i], ids[j])
    want = sorted(zip(a.tolist(), b.tolist(), d.tolist()))
    assert sorted(found) == want and len(found) == len(set(found))


def test_paired_cosines_equal_numpy_and_name_the_shape():
    """The cosine of each pair (a[i], b[i]) (the library's paired_cosines), dense and CSR,
    against NumPy's; rows or kinds that do not pair are ValueErrors."""
    import scipy.sparse as sp

    from simlsh import _simlsh

    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((40, 9)).astype(np.float32) for _ in range(2))
    a[3] = 0
    b[::4, ::2] = 0
    want = np.einsum("ij,ij->i", a.astype(np.float64), b) / np.maximum(
        np.linalg.norm(a.astype(np.float64), axis=1) * np.linalg.norm(b.astype(np.float64), axis=1), 1e-300
    )
    np.testing.assert_allclose(_simlsh.cosines(a, b), want, atol=1e-6)
    assert _simlsh.cosines(a, b)[3] == 0.0

    def csr(x):
        m = sp.csr_matrix(x)
        return (m.indptr.astype(np.int64), m.indices.astype(np.int64), m.data, x.shape[1])

    np.testing.assert_allclose(_simlsh.cosines(csr(a), csr(b), threads=1), want, atol=1e-12)
    with pytest.raises(ValueError, match="a vs b rows"):
        _simlsh.cosines(a, b[:-1])
    with pytest.raises(ValueError, match="columns"):
        _simlsh.cosines(a, b[:, :-1].copy())
    with pytest.raises(ValueError, match="one kind"):
        _simlsh.cosines(a, csr(b))


@pytest.mark.parametrize("threshold", [0.3, 0.7, 0.9])
def test_cosine_join_equals_brute_force(tweets, threshold):
    """The exact join without signatures: every pair at cosine >= threshold of TF-IDF rows
    (with negative values, repeated rows and empty rows added), each once, with its cosine,
    against the product of the normalised rows; the same at 1 and 3 threads; the report."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    import scipy.sparse as sp

    X = TfidfVectorizer().fit_transform(tweets[:1200]).astype(np.float32)
    rng = np.random.default_rng(7)
    X.data[rng.random(X.nnz) < 0.1] *= -1  # negative weights
    X = sp.vstack([X, X[:40], sp.csr_matrix((3, X.shape[1]), dtype=np.float32)]).tocsr()
    X.sort_indices()
    i, j, c, rep = simlsh.cosine_join(X, threshold, return_report=True, threads=1)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64)).ravel()
    D = X.astype(np.float64)
    cos = (D @ D.T).toarray() / np.outer(np.where(norms > 0, norms, 1), np.where(norms > 0, norms, 1))
    live = norms > 0
    want = np.triu(cos >= threshold, k=1) & live[:, None] & live[None, :]
    # Pairs within rounding of the threshold may fall either way.
    edge = np.abs(cos - threshold) < 1e-6
    got = np.zeros_like(want)
    got[i, j] = True
    assert np.all(i < j) and np.all(np.lexsort((j, i)) == np.arange(len(i)))
    assert not np.any((got != want) & ~edge), "pairs differ from brute force"
    assert len(i) >= 40  # at least the repeated rows
    np.testing.assert_allclose(c, cos[i, j], rtol=1e-6, atol=1e-6)
    assert rep["pairs"] == len(i) and rep["candidates"] >= len(i) and rep["examined"] >= rep["candidates"] // 2
    assert rep["zero_rows"].tolist() == np.nonzero(~live)[0].tolist()
    again = simlsh.cosine_join(X, threshold, threads=3)
    for a, b in zip((i, j, c), again):
        np.testing.assert_array_equal(a, b)


def test_cosine_join_refuses_what_it_cannot_join():
    import scipy.sparse as sp

    X = sp.random(20, 30, density=0.2, format="csr", dtype=np.float32, random_state=1)
    with pytest.raises(ValueError, match="dense rows share every coordinate"):
        simlsh.cosine_join(X.toarray(), 0.8)
    with pytest.raises(TypeError, match="float32 CSR"):
        simlsh.cosine_join(X.astype(np.float64), 0.8)
    for bad in (0.0, -0.5, float("nan")):
        with pytest.raises(ValueError, match="threshold"):
            simlsh.cosine_join(X, bad)
    U = X.copy()
    r = int(np.argmax(np.diff(U.indptr)))
    U.indices[U.indptr[r] : U.indptr[r + 1]] = U.indices[U.indptr[r] : U.indptr[r + 1]][::-1].copy()
    with pytest.raises(ValueError, match="sorted sparse indices"):
        simlsh.cosine_join(U, 0.8)
