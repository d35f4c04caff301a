"""simlsh.rerank against a NumPy oracle: exact cosines of the candidates, sorted."""

import numpy as np
import pytest
import scipy.sparse as sp

import simlsh


def oracle(queries, base, ids, k):
    """Cosines in float64 of each query's candidates, best k, ties by the smaller id."""
    q = np.asarray(queries, dtype=np.float64)
    b = np.asarray(base, dtype=np.float64)
    out_c = np.full((len(q), k), -np.inf)
    out_i = np.full((len(q), k), -1, dtype=np.int64)
    for r in range(len(q)):
        cand = sorted({int(i) for i in ids[r] if i != -1})
        cos = []
        for i in cand:
            n = np.linalg.norm(q[r]) * np.linalg.norm(b[i])
            cos.append((-(q[r] @ b[i] / n) if n > 0 else -0.0, i))
        cos.sort()
        for c, (neg, i) in enumerate(cos[:k]):
            out_c[r, c] = -neg
            out_i[r, c] = i
    return out_c, out_i


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    base = rng.standard_normal((400, 24)).astype(np.float32)
    base[rng.random(base.shape) < 0.5] = 0  # sparse enough to exercise CSR
    base[5] = 0  # a zero row: cosine 0
    queries = base[:30] + 0.3 * rng.standard_normal((30, 24)).astype(np.float32)
    signer = simlsh.HyperplaneSigner(dim=24, bits=128, seed=3)
    index = simlsh.LinearScan(bits=128)
    index.add(signer.sign(base))
    _, cand = index.search(signer.sign(queries), k=40)
    return queries, base, cand


def test_dense_rerank_equals_the_numpy_oracle(data):
    queries, base, cand = data
    C, I = simlsh.rerank(queries, base, cand, k=10)
    oc, oi = oracle(queries, base, cand, 10)
    assert C.shape == (30, 10) and C.dtype == np.float32 and I.dtype == np.int64
    np.testing.assert_array_equal(I, oi)
    np.testing.assert_allclose(C, oc, rtol=0, atol=1e-6)


def test_csr_rerank_equals_the_dense_one(data):
    queries, base, cand = data
    C, I = simlsh.rerank(queries, base, cand, k=10)
    Cs, Is = simlsh.rerank(sp.csr_matrix(queries), sp.csr_matrix(base), cand, k=10)
    np.testing.assert_array_equal(Is, I)
    np.testing.assert_allclose(Cs, C, rtol=0, atol=1e-6)


def test_all_rows_as_candidates_give_the_exact_top_k(data):
    queries, base, _ = data
    every = np.tile(np.arange(len(base)), (len(queries), 1))
    _, I = simlsh.rerank(queries, base, every, k=5)
    qn = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    norms = np.linalg.norm(base, axis=1)
    cos = (qn.astype(np.float64) @ base.T.astype(np.float64)) / np.where(norms > 0, norms, 1)
    np.testing.assert_array_equal(I, np.argsort(-cos, axis=1, kind="stable")[:, :5])


def test_missing_and_duplicate_candidates(data):
    queries, base, _ = data
    ids = np.array([[3, -1, 3, 7], [-1, -1, -1, -1]])
    C, I = simlsh.rerank(queries[:2], base, ids, k=3)
    assert I[0, 2] == -1 and C[0, 2] == -np.inf and sorted(I[0, :2].tolist()) == [3, 7]
    assert (I[1] == -1).all() and np.isneginf(C[1]).all()


def test_bad_inputs_are_clean_exceptions(data):
    queries, base, cand = data
    with pytest.raises(ValueError, match=r"ids\[0, 1\] = 400 has no row"):
        simlsh.rerank(queries[:1], base, np.array([[0, 400]]), k=1)
    with pytest.raises(ValueError, match="k must be at least 1"):
        simlsh.rerank(queries, base, cand, k=0)
    with pytest.raises(ValueError, match="rows for"):
        simlsh.rerank(queries, base, cand[:3], k=2)
    with pytest.raises(ValueError, match="columns"):
        simlsh.rerank(queries[:, :5].copy(), base, cand, k=2)
    bad = queries.copy()
    bad[2, 4] = np.nan
    with pytest.raises(ValueError, match=r"queries`: row 2, column 4: value NaN is not finite"):
        simlsh.rerank(bad, base, cand, k=2)
    with pytest.raises(TypeError, match="float32"):
        simlsh.rerank(queries.astype(np.float64), base, cand, k=2)
    with pytest.raises(TypeError, match="CSR"):
        simlsh.rerank(sp.csr_matrix(queries), base, cand, k=2)
