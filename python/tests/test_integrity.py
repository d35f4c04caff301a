"""Integrity of indexes through Python: a corrupt file is never rewritten as sound, adds are
all or nothing and never lost between threads, ``update_index`` shares the command line's lock,
and a copied load survives its file truncated in place."""

from __future__ import annotations

import os
import pickle
import subprocess
import threading

import numpy as np
import pytest

import simlsh

KINDS = ["linear", "manku:k=2", "mih", "permutation:q=4"]


def _codes(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=(n, 1), dtype=np.uint64)


def _saved(path, kind: str, n: int = 300) -> bytes:
    idx = simlsh.Index(bits=64, spec=kind)
    idx.add(_codes(1, n))
    idx.save(path)
    return path.read_bytes()


@pytest.mark.parametrize("kind", KINDS)
def test_a_corrupt_file_is_never_rewritten_as_sound(tmp_path, kind):
    """Every file with one flipped bit that loads (the O(1) open) refuses to be saved, to its
    own path or another, after an add or not, pickled or through ``update_index``, with a
    ``FormatError`` naming it: the damaged file stays byte for byte, nothing else is written."""
    path = tmp_path / "codes.idx"
    good = _saved(path, kind)
    rng = np.random.default_rng(7)
    loaded = 0
    for trial in range(30):
        bad = bytearray(good)
        at = int(rng.integers(len(bad)))
        bad[at] ^= 1 << int(rng.integers(8))
        path.write_bytes(bytes(bad))
        with pytest.raises(simlsh.FormatError):
            simlsh.load_index(path, verify=True)
        try:
            idx = simlsh.load_index(path)
        except simlsh.FormatError:
            continue
        loaded += 1
        if trial % 2:
            try:
                idx.add(_codes(3, 3), ids=np.arange(7000, 7003))
            except ValueError:
                pass
        for target in (path, tmp_path / "copy.idx"):
            with pytest.raises(simlsh.FormatError, match="codes.idx"):
                idx.save(target)
        with pytest.raises(simlsh.FormatError):
            pickle.dumps(idx)
        assert not idx.verified
        with pytest.raises(simlsh.FormatError):
            with simlsh.update_index(path) as idx:
                idx.add(_codes(2, 5), ids=np.arange(5000, 5005))
        assert path.read_bytes() == bytes(bad), f"byte {at}: the damaged file changed"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["codes.idx"]
    assert loaded >= 10
    # Sound: saved after a verification, once.
    path.write_bytes(good)
    idx = simlsh.load_index(path)
    assert not idx.verified
    idx.save(tmp_path / "copy.idx")
    assert idx.verified
    simlsh.verify_index(tmp_path / "copy.idx")


@pytest.mark.parametrize("kind", KINDS)
def test_a_failing_add_stores_none_of_its_codes(kind):
    """200,000 codes whose last id is already stored: the add raises and stores nothing."""
    idx = simlsh.Index(bits=64, spec=kind)
    idx.add(_codes(1, 1000))
    codes = _codes(2, 200_000)
    ids = np.arange(10_000, 210_000)
    ids[-1] = 999
    with pytest.raises(ValueError, match="999"):
        idx.add(codes, ids=ids)
    assert len(idx) == 1000
    D, I = idx.search(codes[:50], k=1)
    assert not np.isin(I, ids[:-1]).any()
    idx.add(codes[:-1], ids=ids[:-1])
    assert len(idx) == 200_999


@pytest.mark.parametrize("kind", ["linear", "mih"])
def test_concurrent_adds_lose_nothing(kind):
    """Four threads adding 20,000 codes each (default ids) to one empty index: 80,000 stored,
    every code under one id, in every trial."""
    for trial in range(4):
        idx = simlsh.Index(bits=64, spec=kind)
        batches = [_codes(100 * trial + t, 20_000) for t in range(4)]
        barrier = threading.Barrier(4)

        def add(c, idx=idx, barrier=barrier):
            barrier.wait()
            idx.add(c)

        threads = [threading.Thread(target=add, args=(c,)) for c in batches]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(idx) == 80_000, f"trial {trial}: {len(idx)}"
        D, I = idx.search(np.ascontiguousarray(np.concatenate(batches)[::997]), k=1)
        assert (D[:, 0] == 0).all() and (I[:, 0] >= 0).all()


def test_a_concurrent_save_never_writes_half_an_add(tmp_path):
    """Saves during adds of 150,000-code batches (larger than any chunk an add might be cut
    into): every saved file holds whole batches."""
    idx = simlsh.LinearScan(bits=64)
    batch = 150_000
    done = threading.Event()

    def adder():
        for b in range(4):
            idx.add(_codes(b, batch), ids=np.arange(b * batch, (b + 1) * batch))
        done.set()

    t = threading.Thread(target=adder)
    t.start()
    sizes = []
    k = 0
    while not done.is_set() or k < 2:
        p = tmp_path / f"snap{k}.idx"
        idx.save(p)
        sizes.append(len(simlsh.load_index(p, verify=True)))
        p.unlink()
        k += 1
    t.join()
    assert all(s % batch == 0 for s in sizes), sizes
    assert sizes[-1] == 4 * batch


def test_update_index_shares_the_command_lines_lock(tmp_path, cli):
    """Python's ``update_index`` and ``simlsh index add`` adding to one file concurrently: every
    add of both lands. No lock file is left beside the index."""
    path = tmp_path / "codes.idx"
    simlsh.MultiIndex(bits=64).save(path)
    n_cli, n_py, per = 8, 8, 200
    files = []
    for b in range(n_cli):
        f = tmp_path / f"cli{b}.npy"
        np.save(f, _codes(50 + b, per))
        files.append(f)

    def by_cli():
        for b, f in enumerate(files):
            r = subprocess.run(
                [str(cli), "--quiet", "index", "add", str(path), str(f), "--first-id", str(b * per)],
                capture_output=True, text=True,
            )
            assert r.returncode == 0, r.stderr

    def by_python():
        for b in range(n_py):
            with simlsh.update_index(path) as idx:
                start = 1_000_000 + b * per
                idx.add(_codes(90 + b, per), ids=np.arange(start, start + per))

    threads = [threading.Thread(target=by_cli), threading.Thread(target=by_python)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    idx = simlsh.load_index(path, verify=True)
    assert len(idx) == (n_cli + n_py) * per
    lims, D, I = idx.range_search(np.concatenate([_codes(50 + b, per) for b in range(n_cli)]), 0)
    assert len(set(I.tolist()) & set(range(n_cli * per))) == n_cli * per
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_update_index_holds_the_lock_and_saves_on_success_only(tmp_path):
    path = tmp_path / "codes.idx"
    simlsh.LinearScan(bits=64).save(path)
    with simlsh.update_index(path) as idx:
        with pytest.raises(BlockingIOError):
            simlsh._simlsh.FileLock(str(path), blocking=False)
        idx.add(_codes(1, 10))
    assert len(simlsh.load_index(path)) == 10
    simlsh._simlsh.FileLock(str(path), blocking=False).release()
    before = path.read_bytes()
    with pytest.raises(RuntimeError):
        with simlsh.update_index(path) as idx:
            idx.add(_codes(2, 10))
            raise RuntimeError("abandoned")
    assert path.read_bytes() == before
    with pytest.raises(FileNotFoundError):
        with simlsh.update_index(tmp_path / "missing.idx"):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["codes.idx"]


def test_a_copied_load_survives_its_file_truncated_in_place(tmp_path):
    """``copy=True`` reads the file into memory: truncating the file in place afterwards (which
    kills a process reading a mapped page past the new end with SIGBUS) changes nothing."""
    path = tmp_path / "codes.idx"
    codes = _codes(3, 20_000)
    idx = simlsh.MultiIndex(bits=64)
    idx.add(codes)
    idx.save(path)
    queries = np.ascontiguousarray(codes[::101])
    want = idx.search(queries, k=3)
    copied = simlsh.load_index(path, copy=True)
    with open(path, "r+b") as f:
        f.truncate(0)
    got = copied.search(queries, k=3)
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
    assert os.path.getsize(path) == 0
