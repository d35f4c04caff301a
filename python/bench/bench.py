"""Benchmark of the Python package on the fixed workloads W1-W5, to compare with the Rust
criterion figures (``cargo bench --bench signing``, ``--bench manku``, ``--bench hamming``) and
the side-by-side comparison.

Usage::

    cargo run --release --example write_workloads -- DIR     # writes W1-W5 (raw files)
    python python/bench/bench.py DIR [--threads 1] [--repeat 5] [--only w1,w2] \
        [--rust target/release/examples/compare_worker]

Prints, per operation, the median of ``--repeat`` runs after one warm-up (seconds) and a
throughput; the inputs are read into memory before the timer, as in the Rust benches.
With ``--rust`` (``cargo build --release --example compare_worker``), each operation is also
run by the Rust library in its own process, right before the Python one, with the same
parameters, threads and repetitions, and the ratio Python / Rust is printed: the figure to
quote on a shared, noisy machine. Not a test: quote the figures with the load (printed first).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import subprocess
import tempfile

import numpy as np
import scipy.sparse as sp

import simlsh


def median_time(fn, repeat: int) -> float:
    fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def load(dir_: str, name: str, dtype) -> np.ndarray:
    """A workload file read into memory (as the Rust worker does: a memory map's 4 KiB pages
    cost more TLB misses than the heap's huge pages)."""
    return np.fromfile(os.path.join(dir_, name), dtype=dtype)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="w1,w2,w3,w4,w5")
    ap.add_argument("--rust", help="the compare_worker binary, to time the Rust library in the same run")
    a = ap.parse_args()
    only = set(a.only.split(","))
    T = a.threads
    print(f"# simlsh {simlsh.__version__}, threads={T}, load average {os.getloadavg()[0]:.2f}, "
          f"{os.cpu_count()} cores", flush=True)
    rows = []

    def rust(job: list[str]) -> float | None:
        """The Rust library's median time of the same job (compare_worker), or None."""
        if not a.rust:
            return None
        out = subprocess.run(
            [a.rust, *job, "--data", a.dir, "--out", tmp, "--threads", str(T), "--reps", str(a.repeat)],
            capture_output=True, text=True, check=True,
        ).stdout
        return json.loads(out.strip().splitlines()[-1])["seconds"]

    def report(name, secs, what, rust_secs=None):
        rows.append((name, secs, what))
        ratio = f"  rust {rust_secs * 1e3:9.2f} ms, python/rust {secs / rust_secs:5.2f}" if rust_secs else ""
        print(f"{name:<48} {secs * 1e3:10.2f} ms  {what}{ratio}", flush=True)

    tmp = tempfile.mkdtemp(prefix="simlsh-bench-")

    if "w1" in only:
        indptr = np.fromfile(os.path.join(a.dir, "w1.indptr.i64"), dtype=np.int64)
        indices = load(a.dir, "w1.indices.u32", np.uint32).view(np.int32)
        data = load(a.dir, "w1.data.f32", np.float32)
        X = sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, 1 << 20), copy=False)
        nnz = X.nnz
        for bits in (64, 256):
            s = simlsh.HashingTrick(bits=bits, seed=0)
            r = rust(["w1", "hashing-trick", "--f", str(bits)])
            t = median_time(lambda s=s: s.sign(X, threads=T), a.repeat)
            report(f"W1 hashing trick f={bits} (100k sparse rows)", t, f"{t / nnz * 1e9:.2f} ns/nonzero", r)
    if "w2" in only:
        x = load(a.dir, "w2.x.f32", np.float32).reshape(-1, 384)
        for bits in (64, 256):
            s = simlsh.HyperplaneSigner(dim=384, bits=bits, seed=0)
            r = rust(["w2", "gaussian", "--f", str(bits)])
            t = median_time(lambda s=s: s.sign(x, threads=T), a.repeat)
            report(f"W2 gaussian f={bits} (100k x 384 dense)", t, f"{len(x) / t / 1e6:.2f} M rows/s", r)
    if "w3" in only:
        codes = np.ascontiguousarray(load(a.dir, "w3.index.u64", np.uint64)).reshape(-1, 1)
        q = np.ascontiguousarray(load(a.dir, "w3.queries.u64", np.uint64)).reshape(-1, 1)
        for name, job, idx in (("PermutedTables 4 tables", "manku", simlsh.PermutedTables(bits=64, radius=3, blocks=4)),
                               ("MultiIndex", "mih", simlsh.MultiIndex(bits=64))):
            r = rust(["w3", job])
            t0 = time.perf_counter()
            idx.add(codes, threads=T)
            build = time.perf_counter() - t0
            t = median_time(lambda idx=idx: idx.range_search(q, 3, threads=T), a.repeat)
            report(f"W3 {name} radius 3 (10k queries, 1M codes)", t,
                   f"{len(q) / t / 1e6:.2f} M queries/s; build {build:.2f} s; {idx.memory / len(idx):.1f} B/code", r)
    if "w4" in only:
        codes = np.ascontiguousarray(load(a.dir, "w4.codes.u64", np.uint64)).reshape(-1, 1)
        res = {}

        def join():
            res["n"] = len(simlsh.self_join(codes, 3, threads=T)[0])

        r = rust(["w4", "join"])
        t = median_time(join, a.repeat)
        report("W4 self_join radius 3 (1M codes)", t, f"{res['n']} pairs", r)
    if "w5" in only:
        codes = np.ascontiguousarray(load(a.dir, "w5.index.u64", np.uint64)).reshape(-1, 4)
        q = np.ascontiguousarray(load(a.dir, "w5.queries.u64", np.uint64)).reshape(-1, 4)
        idx = simlsh.LinearScan(bits=256)
        idx.add(codes)
        r = rust(["w5", "linear"])
        t = median_time(lambda: idx.search(q, 10, threads=T), a.repeat)
        report("W5 LinearScan 10-NN (1k queries, 1M 256-bit)", t, f"{len(q) / t:.0f} queries/s", r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
