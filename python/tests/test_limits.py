"""Hostile sizes and values raise the right exception instead of aborting, panicking or
answering wrongly: results of any ``k``, pools and permutation counts no process holds, thread
counts beyond the cores, values ``float32`` cannot hold, estimates of impossible distances,
signatures of different widths, and a k-NN graph index that does not hold its rows."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import simlsh
from conftest import random_codes


def capped(code: str, cap_bytes: int = 2 << 30) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter whose address space is capped (``RLIMIT_AS``):
    an allocation the library did not check would abort it."""
    prelude = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, ({cap_bytes}, {cap_bytes}))
        import numpy as np, simlsh
    """)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120)


def test_search_pads_k_beyond_the_stored_codes_and_refuses_what_no_memory_holds():
    codes = random_codes(np.random.default_rng(0), 20, 64)
    idx = simlsh.LinearScan(bits=64)
    idx.add(codes)
    D, I = idx.search(codes[:3], 25)
    assert D.shape == I.shape == (3, 25)
    assert (I[:, 20:] == -1).all() and (D[:, 20:] == 2**31 - 1).all()
    assert sorted(I[0, :20].tolist()) == list(range(20)) and I[0, 0] == 0
    for k in (2**62, 10**12):
        with pytest.raises(MemoryError, match="search"):
            idx.search(codes[:3], k)
    for k in (2**40, 10**12):
        with pytest.raises(MemoryError):
            simlsh.knn_graph(codes, k)
    X = np.random.default_rng(1).standard_normal((20, 8)).astype(np.float32)
    with pytest.raises(MemoryError):
        simlsh.rerank(X[:3], X, I[:, :5], k=2**40)


@pytest.mark.parametrize("code", [
    "simlsh.PooledSigner(bits=64, pool_size=2**32)",
    "simlsh.PermutationIndex(bits=64, permutations=10**8)",
    "simlsh.LinearScan(bits=64).search(np.zeros((1000, 1), np.uint64), 10**9)",
], ids=["pool", "permutations", "search"])
def test_what_no_process_holds_is_a_memory_error_under_an_address_space_cap(code):
    r = capped(f"""
        try:
            {textwrap.indent(textwrap.dedent(code).strip(), '            ').lstrip()}
        except MemoryError as e:
            print("MemoryError", e)
    """)
    assert r.returncode == 0 and r.stdout.startswith("MemoryError"), (r.returncode, r.stdout, r.stderr[-2000:])


def test_a_pickle_naming_a_huge_index_builds_what_its_bytes_hold():
    """A pickle carries the index's bytes and the spec it was asked for: the bytes decide what
    is built (a hostile name of 10^8 permutations neither aborts nor allocates)."""
    r = capped("""
        import pickle, simlsh.index as si
        small = simlsh.PermutationIndex(bits=64, permutations=2)._core.to_bytes()
        class Hostile:
            def __reduce__(self):
                return (si._index_from_bytes, (small, "permutation:q=100000000,beam=32,seed=0"))
        idx = pickle.loads(pickle.dumps(Hostile()))
        idx.add(np.arange(10, dtype=np.uint64).reshape(10, 1))
        print(idx._core.built_spec, len(idx))
    """)
    assert r.returncode == 0 and r.stdout.split() == ["permutation:q=2", "10"], (r.stdout, r.stderr[-2000:])


def test_idf_load_of_a_device_without_line_breaks_is_an_error():
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    r = capped("""
        try:
            simlsh.Idf.load('/dev/zero')
        except (ValueError, OSError) as e:
            print(type(e).__name__, e)
    """)
    # Refused by the line cap, naming the file and line, before any buffer grows.
    assert r.returncode == 0 and r.stdout.startswith("FormatError /dev/zero:1:"), (r.stdout, r.stderr[-2000:])
    assert "longer than" in r.stdout, r.stdout


def test_thread_counts_follow_the_library_rule():
    X = np.random.default_rng(2).standard_normal((3000, 16)).astype(np.float32)
    s = simlsh.HyperplaneSigner(dim=16, bits=64, seed=1)
    want = s.sign(X)
    before = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 0
    assert (s.sign(X, threads=10**5) == want).all()
    assert (s.sign(X, threads=-1) == want).all()
    assert (s.sign(X, threads=1) == want).all()
    if before:
        # Clamped to the cores: a pool of at most os.cpu_count() threads was added.
        assert len(os.listdir("/proc/self/task")) <= before + 2 * (os.cpu_count() or 1)
    # As scikit-learn's n_jobs: -2 is all cores but one (at least one thread); 0 is refused.
    assert (s.sign(X, threads=-2) == want).all()
    assert (s.sign(X, threads=-(2**40)) == want).all()
    with pytest.raises(ValueError, match="threads"):
        s.sign(X, threads=0)


def test_float64_values_float32_cannot_hold_are_refused():
    s = simlsh.HyperplaneSigner(dim=8, bits=64, seed=1)
    X = np.random.default_rng(3).standard_normal((4, 8))
    # Scaled by a power of two: the same directions, the same signatures.
    assert (s.sign(X * 2.0**-60) == s.sign(X)).all()
    for scale, what in ((1e-60, "below the range"), (1e300, "beyond the range")):
        Y = X.copy()
        Y[2, 5] *= scale
        with pytest.raises(ValueError, match=f"row 2, column 5: .*{what}"):
            s.sign(Y)
    sp = pytest.importorskip("scipy.sparse")
    M = sp.csr_matrix(X)
    M.data[7] = 1e-60
    with pytest.raises(ValueError, match="below the range"):
        s.sign(M)


def test_values_whose_projections_could_overflow_are_refused():
    s = simlsh.HyperplaneSigner(dim=64, bits=256, seed=1)
    X = np.full((2, 64), 3e38, dtype=np.float32)
    X[1, ::2] = -3e38
    with pytest.raises(ValueError, match="row 0, column 0: .*exceeds 2\\^64"):
        s.sign(X)
    # Scaled down, the same directions sign without error.
    assert s.sign(X / np.float32(2.0**100)).shape == (2, 4)
    with pytest.raises(ValueError, match="exceeds 2\\^64"):
        simlsh.HashedGaussian(bits=64).sign([["a", "b"]], weights=[[1.0, 1e30]])


def test_estimates_refuse_impossible_distances():
    assert simlsh.cosine(64, 64) == -1.0 and simlsh.angle(0, 64) == 0.0
    for h, f in ((100, 64), (65, 64), (0, 0)):
        for fn in (simlsh.cosine, simlsh.angle):
            with pytest.raises(ValueError):
                fn(h, f)
    with pytest.raises(ValueError, match="element 1"):
        simlsh.cosine([3, 70], 64)


def test_hamming_refuses_signatures_of_different_widths():
    a = np.zeros((3, 2), np.uint64)
    with pytest.raises(ValueError, match="words"):
        simlsh.hamming(a, np.zeros((3, 1), np.uint64))
    assert simlsh.hamming(a, np.ones((1, 2), np.uint64)).tolist() == [2, 2, 2]


def test_knn_graph_refuses_an_index_that_does_not_hold_row_i_under_id_i():
    codes = random_codes(np.random.default_rng(4), 50, 64)
    idx = simlsh.LinearScan(bits=64)
    idx.add(codes, ids=np.arange(50) + 7)
    with pytest.raises(ValueError, match="ids 0..50"):
        simlsh.knn_graph(codes, 3, index=idx)
    good = simlsh.LinearScan(bits=64)
    good.add(codes)
    D, I = simlsh.knn_graph(codes, 3, index=good)
    D2, I2 = simlsh.knn_graph(codes, 3)
    assert (D == D2).all() and (I == I2).all()
