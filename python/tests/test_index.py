"""Indexes against the NumPy brute-force oracle: radius and k-NN search of every kind, after
builds, inserts and removals; FAISS-shaped results; files shared with the command line;
pickling."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import simlsh
from conftest import popcount_distances, random_codes, run_cli

KINDS = [
    lambda bits: simlsh.LinearScan(bits=bits),
    lambda bits: simlsh.PermutedTables(bits=bits, radius=3),
    lambda bits: simlsh.PermutedTables(bits=bits, radius=2, levels=[4, 4]),
    lambda bits: simlsh.MultiIndex(bits=bits),
    lambda bits: simlsh.MultiIndex(bits=bits, substrings=3),
    lambda bits: simlsh.PermutationIndex(bits=bits, permutations=8, beam=16, seed=3),
    lambda bits: simlsh.Index(bits=bits, spec="mih:m=2"),
    lambda bits: simlsh.GraphIndex(bits=bits),
    lambda bits: simlsh.GraphIndex(bits=bits, m=8, ef_search=16, ef_construction=16, fallback=False),
]
IDS = ["linear", "manku", "manku-4+4", "mih", "mih-m3", "permutation", "spec", "graph", "graph-forced"]


def oracle_range(dist: np.ndarray, ids: np.ndarray, r: int):
    lims, D, I = [0], [], []
    for row in dist:
        hit = np.flatnonzero(row <= r)
        order = np.lexsort((ids[hit], row[hit]))
        D += row[hit][order].tolist()
        I += ids[hit][order].tolist()
        lims.append(len(D))
    return lims, D, I


def oracle_knn(dist: np.ndarray, ids: np.ndarray, k: int):
    D = np.full((len(dist), k), 2**31 - 1)
    I = np.full((len(dist), k), -1)
    for q, row in enumerate(dist):
        order = np.lexsort((ids, row))[:k]
        D[q, : len(order)] = row[order]
        I[q, : len(order)] = ids[order]
    return D, I


@pytest.mark.parametrize("make", KINDS, ids=IDS)
@pytest.mark.parametrize("bits", [64, 100])
def test_searches_equal_brute_force_after_build_inserts_and_removals(make, bits):
    rng = np.random.default_rng(bits)
    codes = random_codes(rng, 3000, bits, planted=600, flips=4)
    queries = np.concatenate([codes[rng.choice(3000, 150)], random_codes(rng, 50, bits)])
    idx = make(bits)
    idx.add(codes[:2000])  # one-pass build, ids 0..1999
    idx.add(codes[2000:], ids=np.arange(5000, 6000))  # inserts, ids of the caller's choice
    gone = rng.choice(np.concatenate([np.arange(2000), np.arange(5000, 6000)]), 400, replace=False)
    assert idx.remove(gone) == 400 and idx.remove(gone[:10]) == 0
    ids = np.concatenate([np.arange(2000), np.arange(5000, 6000)])
    keep = ~np.isin(ids, gone)
    stored, ids = codes[keep], ids[keep]
    assert len(idx) == len(stored) == idx.ntotal
    dist = popcount_distances(queries, stored)
    for r in (0, 3, 5):
        lims, D, I = idx.range_search(queries, r)
        assert lims.dtype == np.int64 and D.dtype == np.int32 and I.dtype == np.int64
        el, ed, ei = oracle_range(dist, ids, r)
        assert lims.tolist() == el and D.tolist() == ed and I.tolist() == ei
    for k in (1, 10):
        D, I = idx.search(queries, k)
        ed, ei = oracle_knn(dist, ids, k)
        if idx.exact_knn:
            np.testing.assert_array_equal(D, ed)
            np.testing.assert_array_equal(I, ei)
        else:
            # Approximate: every reported hit is a real stored code at its true distance, in
            # order, and recall against the exact answer is high on these planted neighbours.
            row = {int(i): n for n, i in enumerate(ids)}
            for q in range(len(queries)):
                for d, i in zip(D[q], I[q]):
                    assert i == -1 or dist[q, row[int(i)]] == d
                assert np.all(np.diff(D[q]) >= 0)
            # Recall of the close neighbours (the planted ones, distance <= 4): permutation
            # search is built to find those; far ones (random codes at ~bits/2) it may miss.
            near = [(q, int(i)) for q in range(len(queries)) for d, i in zip(ed[q], ei[q]) if d <= 4]
            found = sum(i in set(I[q].tolist()) for q, i in near)
            assert len(near) > 100 and found >= 0.95 * len(near)


def test_fewer_stored_than_k_pads_like_faiss():
    idx = simlsh.LinearScan(bits=64)
    idx.add(np.array([[5], [7]], dtype=np.uint64))
    D, I = idx.search(np.array([[5]], dtype=np.uint64), 4)
    assert I.tolist() == [[0, 1, -1, -1]] and D.tolist() == [[0, 1, 2**31 - 1, 2**31 - 1]]
    empty = simlsh.MultiIndex(bits=64)
    lims, D, I = empty.range_search(np.zeros((3, 1), np.uint64), 5)
    assert lims.tolist() == [0, 0, 0, 0] and len(D) == len(I) == 0


@pytest.mark.parametrize("make", KINDS, ids=IDS)
def test_pickles_in_memory_with_no_usable_temporary_directory(tmp_path, monkeypatch, make):
    """Pickling writes and reads the index's bytes in memory: with TMPDIR naming a missing
    directory, and then a read-only one, every kind still round-trips (an index loaded from a
    file and changed included) and answers exactly as before."""
    rng = np.random.default_rng(11)
    codes = random_codes(rng, 1500, 128, planted=150)
    idx = make(128)
    idx.add(codes)
    idx.remove([0, 7])
    path = tmp_path / "x.simlsh"
    idx.save(path)
    loaded = simlsh.load_index(path)
    loaded.add(codes[7:8], ids=[7])
    q = codes[:80]
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    readonly.chmod(0o500)
    try:
        for tmpdir in (tmp_path / "missing", readonly):
            monkeypatch.setenv("TMPDIR", str(tmpdir))
            for index in (idx, loaded):
                want = index.range_search(q, 7), index.search(q, 6)
                other = pickle.loads(pickle.dumps(index))
                assert other.kind == index.kind and other.spec == index.spec
                assert len(other) == len(index)
                got = other.range_search(q, 7), other.search(q, 6)
                for a, b in zip(got[0] + got[1], want[0] + want[1]):
                    np.testing.assert_array_equal(a, b)
    finally:
        readonly.chmod(0o700)


@pytest.mark.parametrize("make", KINDS, ids=IDS)
def test_save_load_and_pickle_round_trips(tmp_path, make):
    rng = np.random.default_rng(7)
    codes = random_codes(rng, 2000, 128, planted=200)
    idx = make(128)
    idx.add(codes)
    idx.remove([3, 4, 5])
    q = codes[:100]
    want = idx.range_search(q, 6), idx.search(q, 5)
    path = tmp_path / "x.simlsh"
    idx.save(path)
    for other in (simlsh.load_index(path), simlsh.Index.load(str(path)), pickle.loads(pickle.dumps(idx))):
        assert isinstance(other, simlsh.Index) and other.kind == idx.kind and other.spec == idx.spec
        classes = {"linear": simlsh.LinearScan, "manku": simlsh.PermutedTables, "mih": simlsh.MultiIndex,
                   "permutation": simlsh.PermutationIndex, "graph": simlsh.GraphIndex}
        assert type(other) is classes[idx.kind]
        assert len(other) == len(idx) and other.bits == 128
        got = other.range_search(q, 6), other.search(q, 5)
        for a, b in zip(got[0] + got[1], want[0] + want[1]):
            np.testing.assert_array_equal(a, b)
        other.add(codes[3:6], ids=[3, 4, 5])  # a loaded (mapped) index takes inserts
        assert len(other) == len(idx) + 3


@pytest.mark.parametrize("kind", ["linear", "manku", "mih", "permutation", "graph"])
def test_index_files_are_shared_with_the_command_line(tmp_path, cli, kind):
    rng = np.random.default_rng(11)
    codes = random_codes(rng, 1500, 64, planted=300)
    np.save(tmp_path / "codes.npy", codes)
    np.save(tmp_path / "q.npy", codes[:40])
    # CLI builds, Python answers.
    run_cli(cli, "index", "build", "--kind", kind, tmp_path / "codes.npy", tmp_path / "cli.idx")
    idx = simlsh.load_index(tmp_path / "cli.idx")
    assert idx.kind == kind and len(idx) == 1500
    dist = popcount_distances(codes[:40], codes)
    lims, D, I = idx.range_search(codes[:40], 3)
    el, ed, ei = oracle_range(dist, np.arange(1500), 3)
    assert lims.tolist() == el and I.tolist() == ei
    # Python builds, the CLI answers the same.
    py = simlsh.Index(bits=64, spec=kind)
    py.add(codes)
    py.save(tmp_path / "py.idx")
    out = run_cli(cli, "index", "query", tmp_path / "py.idx", tmp_path / "q.npy", "--radius", 3)
    rows = [line.split("\t") for line in out.strip().splitlines()[1:]]
    got = sorted((int(q), int(d), int(h)) for q, h, d, _ in rows)
    want = sorted((q, int(D[k]), int(I[k])) for q in range(40) for k in range(lims[q], lims[q + 1]))
    assert got == want


def test_add_reports_bad_rows_and_duplicate_ids():
    idx = simlsh.PermutedTables(bits=64)
    idx.add(np.array([[1], [2]], dtype=np.uint64))
    with pytest.raises(ValueError, match="id 1"):
        idx.add(np.array([[3]], dtype=np.uint64), ids=[1])
    narrow = simlsh.LinearScan(bits=10)
    with pytest.raises(ValueError, match=r"row 1: bits set beyond the signature width of 10"):
        narrow.add(np.array([[1], [1 << 12]], dtype=np.uint64), ids=[0, 1])
    with pytest.raises(ValueError, match="2 words per row"):
        idx.search(np.zeros((1, 2), np.uint64), 1)
    with pytest.raises(ValueError, match=r"ids\[0\] = -1"):
        idx.add(np.array([[3]], dtype=np.uint64), ids=[-1])
    with pytest.raises(ValueError, match="unknown"):
        simlsh.Index(bits=64, spec="lsh-forest")


def test_threads_search_while_another_adds():
    """Searches share the index, add and remove hold it alone: Python threads may mix them
    (no deadlock with the GIL, every answer exact for the state it saw)."""
    import threading

    rng = np.random.default_rng(4)
    codes = random_codes(rng, 40_000, 64)
    idx = simlsh.MultiIndex(bits=64)
    idx.add(codes[:10_000])
    errors = []

    def searcher():
        try:
            for _ in range(30):
                D, I = idx.search(codes[:50], 1)
                assert D[:, 0].tolist() == [0] * 50 and I[:, 0].tolist() == list(range(50))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for t in threads:
        t.start()
    for lo in range(10_000, 40_000, 5_000):
        idx.add(codes[lo : lo + 5_000], ids=np.arange(lo, lo + 5_000))
    for t in threads:
        t.join()
    assert not errors and len(idx) == 40_000


def test_default_ids_are_the_command_lines(tmp_path, cli):
    """``add`` without ids takes the library's default ids (one past the largest id stored,
    removed ones never reused), as ``simlsh index add`` without ``--first-id`` does on the same
    file."""
    rng = np.random.default_rng(3)
    a, b = random_codes(rng, 300, 64), random_codes(rng, 40, 64)
    idx = simlsh.LinearScan(bits=64)
    idx.add(a)
    idx.remove([299, 298, 5])
    idx.add(b)  # ids continue past 299, which was stored
    _, I = idx.search(b, k=1)
    assert I[:, 0].tolist() == list(range(300, 340))
    path, sigs = tmp_path / "x.simlsh", tmp_path / "b.npy"
    idx.remove([339])
    idx.save(path)
    np.save(sigs, b)
    in_python = simlsh.load_index(path)
    in_python.add(b)
    run_cli(cli, "index", "add", path, sigs)
    # Both continue past the largest id the file holds, 338.
    for index in (simlsh.load_index(path), in_python):
        _, I = index.search(b[:1], k=len(index))  # every id stored
        got = sorted(i for i in I[0].tolist() if i >= 339)
        assert got == list(range(339, 379)), got


def test_defaults_are_the_librarys(tmp_path):
    """The indexes state no default of their own: leaving the specification, the radius of the
    permuted tables, the permutations, beam and seed of permutation search, or the load options
    out gives the index, results and state of the library's defaults (``_simlsh.defaults()``)
    passed explicitly, and the docstrings quote those values."""
    from simlsh import _simlsh

    d = _simlsh.defaults()
    assert (d["index"], d["manku_radius"], d["permutations"], d["beam"], d["permutation_seed"]) == ("manku", 3, 16, 32, 0)
    assert (d["load_verify"], d["load_copy"]) == (False, False)
    rng = np.random.default_rng(11)
    codes = random_codes(rng, 2000, 128, planted=300, flips=4)
    q = codes[rng.choice(2000, 80)]
    pairs = [
        (simlsh.Index(bits=128), simlsh.Index(bits=128, spec=d["index"])),
        (simlsh.Index(bits=128), simlsh.PermutedTables(bits=128, radius=d["manku_radius"])),
        (simlsh.PermutedTables(bits=128), simlsh.PermutedTables(bits=128, radius=d["manku_radius"])),
        (simlsh.PermutedTables(bits=128, blocks=5), simlsh.PermutedTables(bits=128, radius=d["manku_radius"], blocks=5)),
        (simlsh.PermutationIndex(bits=128), simlsh.PermutationIndex(
            bits=128, permutations=d["permutations"], beam=d["beam"], seed=d["permutation_seed"])),
        (simlsh.PermutationIndex(bits=128, beam=8), simlsh.PermutationIndex(
            bits=128, permutations=d["permutations"], beam=8, seed=d["permutation_seed"])),
    ]
    for omitted, explicit in pairs:
        omitted.add(codes)
        explicit.add(codes)
        assert (omitted.kind, omitted.spec, omitted.memory) == (explicit.kind, explicit.spec, explicit.memory)
        for a, b in zip(omitted.search(q, 10) + omitted.range_search(q, 5), explicit.search(q, 10) + explicit.range_search(q, 5)):
            np.testing.assert_array_equal(a, b)
        assert pickle.loads(pickle.dumps(omitted)).spec == explicit.spec
    # Other values change the index: the comparisons above can tell.
    assert simlsh.PermutedTables(bits=128, radius=2).spec != simlsh.PermutedTables(bits=128).spec
    other = simlsh.PermutationIndex(bits=128, seed=d["permutation_seed"] + 1)
    other.add(codes)
    assert not np.array_equal(other.search(q, 10)[1], pairs[4][0].search(q, 10)[1])
    path = tmp_path / "x.simlsh"
    pairs[0][0].save(path)
    for load in (simlsh.load_index, simlsh.Index.load):
        omitted, explicit = load(path), load(path, verify=d["load_verify"], copy=d["load_copy"])
        assert omitted.verified == explicit.verified == d["load_verify"]
        assert load(path, verify=not d["load_verify"]).verified != d["load_verify"]
        for a, b in zip(omitted.search(q, 10), explicit.search(q, 10)):
            np.testing.assert_array_equal(a, b)
    # The docstrings quote the library's values.
    doc = lambda o: " ".join(o.__doc__.split())  # noqa: E731
    assert f"default the library's, {d['index']}" in doc(simlsh.Index)
    assert f"(default the library's, {d['manku_radius']})" in doc(simlsh.PermutedTables)
    assert all(f"(default the library's, {d[k]})" in doc(simlsh.PermutationIndex) for k in ("permutations", "beam", "permutation_seed"))
    assert f"as ``simlsh index verify``; default the library's, {d['load_verify']})" in doc(simlsh.load_index)
    assert f"(``O(file size)``; default the library's, {d['load_copy']})" in doc(simlsh.load_index)


def test_queries_named_without_features_get_no_hits_as_brute_force_says():
    """Queries named featureless (a mask or row numbers, any order, repeats allowed) get no
    hits; the others get the brute-force answer, all-zero stored codes left out."""
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 2**63, size=(300, 2), dtype=np.uint64)
    codes[::9] = 0
    q = codes[:50].copy()
    named = [7, 3, 3, 40, 9]
    mask = np.zeros(50, bool)
    mask[named] = True
    mask |= ~q.any(axis=1)  # all-zero queries are featureless under the rule too
    dist = popcount_distances(q, codes).astype(np.int64)
    dist[:, ~codes.any(axis=1)] = 10**6
    for idx in (simlsh.LinearScan(bits=128), simlsh.MultiIndex(bits=128)):
        idx.add(codes)
        for featureless in (named, np.array(named[::-1], dtype=np.uint32), mask):
            D, I = idx.search(q, 4, featureless=featureless)
            assert (I[mask] == -1).all() and (D[mask] == 2**31 - 1).all()
            for r in np.flatnonzero(~mask):
                order = np.lexsort((np.arange(300), dist[r]))[:4]
                assert I[r].tolist() == order.tolist() and D[r].tolist() == dist[r][order].tolist()
            lims, D, I = idx.range_search(q, 60, featureless=featureless)
            for r in range(50):
                want = [] if mask[r] else np.flatnonzero(dist[r] <= 60).tolist()
                assert sorted(I[lims[r]:lims[r + 1]].tolist()) == want
        with pytest.raises(ValueError, match="row 50 beyond the 50 rows"):
            idx.search(q, 4, featureless=[3, 50])
        with pytest.raises(ValueError, match="featureless mask has"):
            idx.range_search(q, 4, featureless=np.zeros(49, bool))
