"""Threads adding, removing, searching and saving on one index, checked against a brute-force
model (a dict of id -> code and exact Hamming search), while the command line and Python's
``update_index`` add to one index file concurrently: no add is lost, no search sees a wrong
code, no save holds half a batch, and the final index answers as the model does."""

from __future__ import annotations

import subprocess
import threading
import time

import numpy as np
import pytest

import simlsh

BATCH = 400
POP = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _codes(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=(n, 1), dtype=np.uint64)


def _hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distances of every row of ``a`` (q, 1) to every row of ``b`` (n, 1): (q, n)."""
    x = (a[:, None, 0] ^ b[None, :, 0]).view(np.uint8).reshape(len(a), len(b), 8)
    return POP[x].sum(axis=2, dtype=np.int64)


def _brute_knn(model: dict[int, int], queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.array(sorted(model), dtype=np.int64)
    codes = np.array([[model[i]] for i in ids], dtype=np.uint64).reshape(-1, 1)
    d = _hamming(queries, codes)
    D = np.full((len(queries), k), 2**31 - 1, dtype=np.int64)
    I = np.full((len(queries), k), -1, dtype=np.int64)
    for q in range(len(queries)):
        order = np.lexsort((ids, d[q]))[:k]
        D[q, : len(order)] = d[q, order]
        I[q, : len(order)] = ids[order]
    return D, I


@pytest.mark.parametrize("kind", ["mih", "linear", "manku:k=3"])
def test_threads_on_one_index_and_the_cli_on_one_file(tmp_path, cli, kind):
    idx = simlsh.Index(bits=64, spec=kind)
    rng = np.random.default_rng(1)
    # Every id's code, fixed for the run (ids are never reused): batch b holds ids
    # b * BATCH .. (b + 1) * BATCH; adder thread t adds the batches b = t mod 3.
    n_batches = 36
    all_codes = _codes(11, n_batches * BATCH)
    code_of = {i: int(all_codes[i, 0]) for i in range(len(all_codes))}
    events: list[tuple] = []  # (kind, batch, start, end) from every thread
    log = threading.Lock()
    failures: list[str] = []
    stop = threading.Event()

    def record(*e):
        with log:
            events.append(e)

    def adder(t):
        try:
            for b in range(t, n_batches, 3):
                ids = np.arange(b * BATCH, (b + 1) * BATCH)
                s = time.monotonic()
                idx.add(all_codes[ids], ids=ids)
                record("add", b, s, time.monotonic())
        except Exception as e:  # pragma: no cover - reported below
            failures.append(f"adder {t}: {e!r}")

    def remover():
        # Removes every fourth batch once it is added (whole batches, all or nothing).
        try:
            for b in range(0, n_batches, 4):
                while not any(e[0] == "add" and e[1] == b for e in list(events)):
                    time.sleep(0.001)
                s = time.monotonic()
                n = idx.remove(np.arange(b * BATCH, (b + 1) * BATCH))
                record("remove", b, s, time.monotonic())
                if n != BATCH:
                    failures.append(f"batch {b}: removed {n} of {BATCH}")
        except Exception as e:  # pragma: no cover
            failures.append(f"remover: {e!r}")

    def searcher():
        # Every hit's distance is the true distance to the code stored under its id; results
        # are sorted by (distance, id); a code added before the search began, and not being
        # removed, is found at distance 0.
        try:
            while not stop.is_set():
                with log:
                    added = [e for e in events if e[0] == "add"]
                s = time.monotonic()
                picks = rng.integers(0, len(all_codes), size=64)
                q = all_codes[picks]
                D, I = idx.search(q, k=5)
                lims, RD, RI = idx.range_search(q, 0)
                for r in range(len(q)):
                    hits = [(int(d), int(i)) for d, i in zip(D[r], I[r]) if i >= 0]
                    if hits != sorted(hits):
                        failures.append(f"unsorted {hits}")
                    for d, i in hits:
                        truth = bin(int(q[r, 0]) ^ code_of[i]).count("1")
                        if d != truth:
                            failures.append(f"id {i}: distance {d}, true {truth}")
                    b = int(picks[r]) // BATCH
                    if any(e[1] == b and e[3] < s for e in added) and b % 4 != 0:
                        if int(picks[r]) not in RI[lims[r]:lims[r + 1]].tolist():
                            failures.append(f"id {picks[r]} (added) not found")
        except Exception as e:  # pragma: no cover
            failures.append(f"searcher: {e!r}")

    snaps: list[tuple] = []

    def saver():
        try:
            k = 0
            while not stop.is_set():
                p = tmp_path / f"snap{k}.idx"
                s = time.monotonic()
                idx.save(p)
                snaps.append((p, s, time.monotonic()))
                k += 1
                time.sleep(0.01)
        except Exception as e:  # pragma: no cover
            failures.append(f"saver: {e!r}")

    # The shared file: the command line and update_index add to it concurrently.
    shared = tmp_path / "shared.idx"
    simlsh.Index(bits=64, spec=kind).save(shared)
    file_batches = 6
    for b in range(file_batches):
        np.save(tmp_path / f"cli{b}.npy", _codes(200 + b, BATCH))

    def by_cli():
        for b in range(file_batches):
            r = subprocess.run(
                [str(cli), "--quiet", "index", "add", str(shared), str(tmp_path / f"cli{b}.npy"),
                 "--first-id", str(10_000_000 + b * BATCH)],
                capture_output=True, text=True,
            )
            if r.returncode != 0:
                failures.append(f"cli add {b}: {r.stderr}")

    def by_python():
        try:
            for b in range(file_batches):
                with simlsh.update_index(shared) as f:
                    start = 20_000_000 + b * BATCH
                    f.add(_codes(300 + b, BATCH), ids=np.arange(start, start + BATCH))
        except Exception as e:  # pragma: no cover
            failures.append(f"update_index: {e!r}")

    workers = [threading.Thread(target=adder, args=(t,)) for t in range(3)]
    workers += [threading.Thread(target=remover), threading.Thread(target=by_cli),
                threading.Thread(target=by_python)]
    background = [threading.Thread(target=searcher), threading.Thread(target=saver)]
    for t in workers + background:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    for t in background:
        t.join()
    assert not failures, failures[:5]

    # The model: every batch added, those removed taken out.
    removed = {b for b in range(0, n_batches, 4)}
    model = {i: code_of[i] for b in range(n_batches) if b not in removed
             for i in range(b * BATCH, (b + 1) * BATCH)}
    assert len(idx) == len(model)
    queries = np.ascontiguousarray(np.concatenate([all_codes[::97], _codes(5, 40)]))
    D, I = idx.search(queries, k=10)
    bD, bI = _brute_knn(model, queries, 10)
    assert np.array_equal(D, bD) and np.array_equal(I, bI)
    lims, RD, RI = idx.range_search(queries, 20)
    dist = _hamming(queries, np.array([[c] for c in model.values()], dtype=np.uint64))
    ids = np.array(list(model), dtype=np.int64)
    for q in range(len(queries)):
        want = sorted((int(d), int(i)) for d, i in zip(dist[q], ids) if d <= 20)
        assert list(zip(RD[lims[q]:lims[q + 1]].tolist(), RI[lims[q]:lims[q + 1]].tolist())) == want

    # Every snapshot: verified, whole batches only, every batch added before the save began
    # and not removed before it ended.
    assert len(snaps) >= 2
    for p, s, e in snaps:
        snap = simlsh.load_index(p, verify=True)
        present = set(snap.range_search(all_codes, 0)[2].tolist())
        for b in range(n_batches):
            got = len(present & set(range(b * BATCH, (b + 1) * BATCH)))
            assert got in (0, BATCH), f"{p.name}: batch {b} has {got} of {BATCH}"
            done_before = any(ev[0] == "add" and ev[1] == b and ev[3] < s for ev in events)
            removing = any(ev[0] == "remove" and ev[1] == b and ev[2] < e for ev in events)
            if done_before and not removing:
                assert got == BATCH, f"{p.name}: batch {b} added before the save, missing"

    # The shared file: 0 lost adds, and sound.
    f = simlsh.load_index(shared, verify=True)
    assert len(f) == 2 * file_batches * BATCH
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
