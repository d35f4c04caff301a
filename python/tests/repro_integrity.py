"""Reproducers of the data-integrity defects of issue 17, as counts (not a pytest module).

Runs the campaigns that found them and prints what went wrong:

- laundered files: an index with one flipped bit rewritten by ``simlsh index add`` /
  ``index remove`` or by Python ``load_index -> add -> save``, after which ``index verify``
  passes (the corruption is now "sound");
- lost adds: four threads adding 20,000 codes each (default ids) to one empty index, trials
  ending with fewer than 80,000 codes; a failing add of 200,000 codes (its last id already
  stored) that leaves codes behind; saves during adds holding part of a batch;
- lost adds on a file: ``simlsh index add`` and Python read-modify-writes (``update_index``
  where the package has it, else ``load_index -> add -> save``) adding to one file at once.

Usage: python python/tests/repro_integrity.py [--cli target/release/simlsh] [--scale 1.0]
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import tempfile
import threading

import numpy as np

import simlsh

KINDS = ["linear", "manku:k=2", "mih", "permutation:q=4"]


def codes(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=(n, 1), dtype=np.uint64)


def sh(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True)


def damaged(d: pathlib.Path, kind: str, rng) -> tuple[pathlib.Path, bytes]:
    p = d / "codes.idx"
    idx = simlsh.Index(bits=64, spec=kind)
    idx.add(codes(1, 300))
    idx.save(p)
    b = bytearray(p.read_bytes())
    b[int(rng.integers(len(b)))] ^= 1 << int(rng.integers(8))
    p.write_bytes(bytes(b))
    return p, bytes(b)


def laundering_cli(cli, d, n) -> tuple[int, int, int]:
    """(files, rewritten, laundered) through index add / index remove."""
    rng = np.random.default_rng(1)
    more = d / "more.npy"
    np.save(more, codes(2, 20))
    rewritten = laundered = 0
    for t in range(n):
        p, bad = damaged(d, KINDS[t % 4], rng)
        if t % 2:
            sh(cli, "--quiet", "index", "add", p, more, "--first-id", "9000")
        else:
            sh(cli, "--quiet", "index", "remove", p, "--ids", "3,5")
        if p.read_bytes() != bad:
            rewritten += 1
            if sh(cli, "--quiet", "index", "verify", p).returncode == 0:
                laundered += 1
    return n, rewritten, laundered


def laundering_python(d, n) -> tuple[int, int, int]:
    """(damaged files that load, rewritten, laundered) through load_index -> add -> save."""
    rng = np.random.default_rng(2)
    loaded = rewritten = laundered = 0
    for t in range(n * 3):
        p, bad = damaged(d, KINDS[t % 4], rng)
        try:
            idx = simlsh.load_index(p)
        except Exception:
            continue
        loaded += 1
        try:
            idx.add(codes(3, 5), ids=np.arange(9000, 9005))
            idx.save(p)
        except Exception:
            pass
        if p.read_bytes() != bad:
            rewritten += 1
            try:
                simlsh.verify_index(p)
                laundered += 1
            except Exception:
                pass
        if loaded == n:
            break
    return loaded, rewritten, laundered


def lost_adds_threads(trials: int) -> tuple[int, int]:
    """(trials, trials with fewer than 80,000 codes) of 4 threads x 20,000 default-id adds."""
    bad = 0
    for t in range(trials):
        idx = (simlsh.MultiIndex if t % 2 else simlsh.LinearScan)(bits=64)
        batches = [codes(10 * t + k, 20_000) for k in range(4)]
        barrier = threading.Barrier(4)

        def add(c, idx=idx, barrier=barrier):
            barrier.wait()
            try:
                idx.add(c)
            except Exception:
                pass

        ths = [threading.Thread(target=add, args=(c,)) for c in batches]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        bad += len(idx) < 80_000
    return trials, bad


def failing_add() -> int:
    """Codes left stored by an add of 200,000 whose last id is already stored."""
    idx = simlsh.MultiIndex(bits=64)
    idx.add(codes(1, 10), ids=np.arange(10))
    ids = np.arange(100, 200_100)
    ids[-1] = 5
    try:
        idx.add(codes(2, 200_000), ids=ids)
    except Exception:
        pass
    return len(idx) - 10


def half_saves(d) -> tuple[int, int]:
    """(saves, saves holding part of a batch) during adds of 150,000-code batches."""
    idx = simlsh.LinearScan(bits=64)
    done = threading.Event()
    batch = 150_000

    def adder():
        for b in range(8):
            idx.add(codes(b, batch), ids=np.arange(b * batch, (b + 1) * batch))
        done.set()

    th = threading.Thread(target=adder)
    th.start()
    saves = partial = 0
    while not done.is_set():
        p = d / "snap.idx"
        idx.save(p)
        saves += 1
        partial += len(simlsh.load_index(p)) % batch != 0
    th.join()
    return saves, partial


def lost_adds_file(cli, d, rounds: int) -> tuple[int, int]:
    """(adds made, adds missing) by the CLI and Python on one file at once."""
    p = d / "shared.idx"
    simlsh.MultiIndex(bits=64).save(p)
    per = 100
    for b in range(rounds):
        np.save(d / f"cli{b}.npy", codes(50 + b, per))
    locked = hasattr(simlsh, "update_index")

    def by_cli():
        for b in range(rounds):
            sh(cli, "--quiet", "index", "add", p, d / f"cli{b}.npy", "--first-id", b * per)

    def by_python():
        for b in range(rounds):
            start = 1_000_000 + b * per
            new, ids = codes(90 + b, per), np.arange(start, start + per)
            if locked:
                with simlsh.update_index(p) as idx:
                    idx.add(new, ids=ids)
            else:
                idx = simlsh.load_index(p)
                idx.add(new, ids=ids)
                idx.save(p)

    ths = [threading.Thread(target=by_cli), threading.Thread(target=by_python)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    made = 2 * rounds * per
    return made, made - len(simlsh.load_index(p))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=str(pathlib.Path(__file__).resolve().parents[2] / "target/release/simlsh"))
    ap.add_argument("--scale", type=float, default=1.0)
    a = ap.parse_args()
    s = lambda n: max(1, int(n * a.scale))  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        d = pathlib.Path(tmp)
        n, rw, la = laundering_cli(a.cli, d, s(290))
        print(f"CLI add/remove on damaged files: {n} files, {rw} rewritten, {la} laundered")
        n, rw, la = laundering_python(d, s(86))
        print(f"Python load->add->save on damaged files that load: {n}, {rw} rewritten, {la} laundered")
        n, bad = lost_adds_threads(s(60))
        print(f"4 threads x 20,000 adds: {bad} of {n} trials lost adds")
        print(f"failing add of 200,000 (last id stored): {failing_add()} codes left stored")
        n, partial = half_saves(d)
        print(f"saves during adds: {partial} of {n} hold part of a batch")
        made, lost = lost_adds_file(a.cli, d, s(10))
        print(f"CLI and Python adding to one file: {lost} of {made} adds lost")


if __name__ == "__main__":
    main()
