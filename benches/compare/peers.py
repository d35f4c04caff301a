"""The peers' side of the comparison: one (workload, system, f, threads) job per process.

usage: python peers.py WORKLOAD SYSTEM --data DIR --out DIR [--f BITS] [--threads T]
                       [--reps R] [--sub N]

Same rules as the simlsh worker (benches/compare/worker.rs): data loading, conversion into the
peer's input type and index builds are outside the timer (builds are reported as build_s);
the operation runs --reps times after one warm-up when --reps > 1 and the median is
reported; --sub N runs on the first N rows or queries. The answer goes to --out as raw files
(codes.u8, lims.i64 + ids.i64, pairs.i64 or ids.i64) for compare.py to check, and one JSON
line goes to stdout. Thread counts are set by compare.py through the environment
(OMP_NUM_THREADS, ...); --threads is passed to the APIs that take it (faiss).
"""
import argparse
import hashlib
import json
import logging
import os
import statistics
import time

import numpy as np

QUALITY_ROWS = 2000
W1_D = 1 << 20
W2_D = 384
RADIUS = 3  # W3 and W4
W5_BITS, W5_K = 256, 10


def vmhwm_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


def timed(reps, op):
    """Median wall time of `reps` runs after one warm-up (when reps > 1), and the last result."""
    if reps > 1:
        op()
    times, out = [], None
    for _ in range(max(reps, 1)):
        t0 = time.perf_counter()
        out = op()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, out


def raw(args, name, dtype):
    return np.fromfile(os.path.join(args.data, name), dtype=dtype)


def put(args, name, arr):
    np.ascontiguousarray(arr).tofile(os.path.join(args.out, name))


def put_hits(args, hits):
    lims = np.zeros(len(hits) + 1, dtype=np.int64)
    lims[1:] = np.cumsum([len(h) for h in hits])
    put(args, "lims.i64", lims)
    put(args, "ids.i64", np.concatenate([np.asarray(h, dtype=np.int64) for h in hits] + [np.zeros(0, np.int64)]))


def u8(codes_u64):
    return np.ascontiguousarray(codes_u64).view(np.uint8).reshape(len(codes_u64), -1)


def ints_to_u8(values, f):
    return np.array([list(int(v).to_bytes(f // 8, "little")) for v in values], dtype=np.uint8)


def prefix(n, sub):
    return min(sub, n) if sub else n


# ------------------------------------------------------------------ W1: sparse signing
def w1(args):
    import scipy.sparse as sp

    indptr = raw(args, "w1.indptr.i64", np.int64)
    n_full = len(indptr) - 1
    n = prefix(n_full, args.sub)
    nnz = int(indptr[n])
    indices = raw(args, "w1.indices.u32", np.uint32)[:nnz]
    data = raw(args, "w1.data.f32", np.float32)[:nnz]
    indptr = indptr[: n + 1]
    f, s = args.f, args.system
    rec = {"n": n, "n_full": n_full, "nnz": nnz}
    if s in ("sklearn-srp", "scipy-csr-dense"):
        X = sp.csr_matrix((data, indices.astype(np.int32), indptr), shape=(n, W1_D))
        if s == "sklearn-srp":
            from sklearn.random_projection import SparseRandomProjection

            tr = SparseRandomProjection(n_components=f, density="auto", dense_output=True, random_state=0)
            tr.fit(X[:10])
            proj = tr.transform
            rec["notes"] = "SparseRandomProjection(density=auto).transform + sign + packbits"
        else:
            R = np.random.default_rng(0).standard_normal((W1_D, f), dtype=np.float32)
            proj = lambda A: A @ R  # noqa: E731
            rec["notes"] = "scipy CSR @ dense Gaussian R (2^20 x f, f32) + sign + packbits"
        rec["rss_hwm_before_kb"] = vmhwm_kb()
        med, times, codes = timed(args.reps, lambda: np.packbits(proj(X) > 0, axis=1))
    elif s == "simhash-1e0ng":
        from simhash import Simhash

        kw = {"f": f}
        if f > 128:  # its default md5 gives 128 bits
            kw["hashfunc"] = lambda x: hashlib.sha256(x).digest()
        rows = [[(str(int(a)), float(b)) for a, b in zip(indices[indptr[i]:indptr[i + 1]], data[indptr[i]:indptr[i + 1]])]
                for i in range(n)]
        rec["rss_hwm_before_kb"] = vmhwm_kb()
        med, times, vals = timed(args.reps, lambda: [Simhash(r, **kw).value for r in rows])
        codes = ints_to_u8(vals[:QUALITY_ROWS], f)
        rec["notes"] = "Simhash([(str(id), weight), ...], f) (%s); pure Python" % ("sha256" if f > 128 else "md5")
    elif s == "gaoya-py":
        import gaoya

        if f != 64:
            raise SystemExit("gaoya-py: f = 64 only here")
        docs = [" ".join(map(str, indices[indptr[i]:indptr[i + 1]].tolist())) for i in range(n)]
        idx = gaoya.gaoya.simhash.SimHash64StringIntIndex(6, 3, "word", False, None)
        rec["rss_hwm_before_kb"] = vmhwm_kb()
        if args.threads == 1:
            op = lambda: [idx.doc2signature(d) for d in docs]  # noqa: E731
            how = "doc2signature per document"
        else:
            op = lambda: idx.par_bulk_doc2signatures(docs)  # noqa: E731
            how = "par_bulk_doc2signatures"
        med, times, vals = timed(args.reps, op)
        codes = u8(np.array(vals[:QUALITY_ROWS], dtype=np.uint64))
        rec["notes"] = how + " on space-joined ids: UNWEIGHTED (the API takes no weights)"
    else:
        raise SystemExit("unknown W1 system " + s)
    put(args, "codes.u8", np.asarray(codes)[:QUALITY_ROWS])
    return dict(rec, seconds=med, times=times)


# ------------------------------------------------------------------ W2: dense signing
def w2(args):
    x = raw(args, "w2.x.f32", np.float32).reshape(-1, W2_D)
    n_full = len(x)
    n = prefix(n_full, args.sub)
    X = np.ascontiguousarray(x[:n])
    f, s = args.f, args.system
    if s == "faiss-lsh":
        import faiss

        faiss.omp_set_num_threads(args.threads)
        idx = faiss.IndexLSH(W2_D, f, True, False)
        idx.train(X[:10000])
        op = lambda: idx.sa_encode(X)  # noqa: E731
        notes = "IndexLSH(d, f, rotate_data=True).sa_encode (random rotation + sign)"
    elif s == "numpy":
        R = np.random.default_rng(0).standard_normal((W2_D, f), dtype=np.float32)
        op = lambda: np.packbits(X @ R > 0, axis=1)  # noqa: E731
        notes = "numpy float32 X @ R (OpenBLAS sgemm) + sign + packbits"
    elif s == "simlsh-py":
        import simlsh

        sg = simlsh.signer("gaussian", bits=f, dim=W2_D, seed=0)
        op = lambda: sg.sign(X, threads=args.threads)  # noqa: E731
        notes = "simlsh Python package: signer('gaussian', bits=f, dim=384).sign(X) (the Rust kernel through PyO3)"
    elif s == "sklearn-grp":
        from sklearn.random_projection import GaussianRandomProjection

        tr = GaussianRandomProjection(n_components=f, random_state=0).fit(X[:10])
        op = lambda: np.packbits(tr.transform(X) > 0, axis=1)  # noqa: E731
        notes = "GaussianRandomProjection.transform + sign + packbits"
    else:
        raise SystemExit("unknown W2 system " + s)
    hwm = vmhwm_kb()
    med, times, codes = timed(args.reps, op)
    if s == "simlsh-py":
        codes = u8(np.asarray(codes, dtype=np.uint64))
    put(args, "codes.u8", np.asarray(codes)[:QUALITY_ROWS])
    return {"n": n, "n_full": n_full, "seconds": med, "times": times, "rss_hwm_before_kb": hwm, "notes": notes}


# ------------------------------------------------------------------ W3 / W4 / W5: Hamming search
def faiss_index(args, bits, codes_u8):
    """Builds the faiss binary index named by args.system; returns (index, build_s, notes)."""
    import faiss

    faiss.omp_set_num_threads(args.threads)
    t0 = time.perf_counter()
    if args.system == "faiss-flat":
        idx, notes = faiss.IndexBinaryFlat(bits), "IndexBinaryFlat"
    elif args.system == "faiss-multihash":
        idx, notes = faiss.IndexBinaryMultiHash(bits, 4, 16), "IndexBinaryMultiHash(nhash=4, b=16)"
    elif args.system == "faiss-hash":
        idx = faiss.IndexBinaryHash(bits, 16)
        idx.nflip = 3
        notes = "IndexBinaryHash(b=16, nflip=3)"
    else:
        raise SystemExit("unknown faiss system " + args.system)
    idx.add(codes_u8)
    return idx, time.perf_counter() - t0, notes


def simhash_index(codes):
    from simhash import Simhash, SimhashIndex

    logging.getLogger("simhash").setLevel(logging.ERROR)
    t0 = time.perf_counter()
    idx = SimhashIndex([(str(i), Simhash(int(c), f=64)) for i, c in enumerate(codes.tolist())], f=64, k=RADIUS)
    return idx, time.perf_counter() - t0


def w3(args):
    index = raw(args, "w3.index.u64", np.uint64)
    queries = raw(args, "w3.queries.u64", np.uint64)
    nq = prefix(len(queries), args.sub)
    qs = queries[:nq]
    s = args.system
    build_s = None
    if s == "numpy-brute":
        op = lambda: [np.flatnonzero(np.bitwise_count(index ^ q) <= RADIUS) for q in qs]  # noqa: E731
        notes = "np.flatnonzero(np.bitwise_count(index ^ q) <= 3) per query"
    elif s.startswith("faiss-"):
        idx, build_s, notes = faiss_index(args, 64, u8(index))
        xq = u8(qs)

        def op():
            lims, _, ids = idx.range_search(xq, RADIUS + 1)  # faiss answers d < radius
            return [ids[lims[i]:lims[i + 1]] for i in range(nq)]
        notes += ".range_search(radius = 4), i.e. d <= 3"
    elif s == "simlsh-py":
        import simlsh

        t0 = time.perf_counter()
        idx = simlsh.PermutedTables(bits=64, radius=RADIUS)
        idx.add(index.reshape(-1, 1), threads=args.threads)
        build_s = time.perf_counter() - t0
        q2 = np.ascontiguousarray(qs.reshape(-1, 1))

        def op():
            lims, _, ids = idx.range_search(q2, RADIUS, threads=args.threads)
            return [ids[lims[i]:lims[i + 1]] for i in range(nq)]
        notes = "simlsh Python package: PermutedTables(bits=64, radius=3).range_search (d <= 3)"
    elif s == "simhash-1e0ng":
        from simhash import Simhash

        idx, build_s = simhash_index(index)
        sq = [Simhash(int(q), f=64) for q in qs.tolist()]
        op = lambda: [[int(x) for x in idx.get_near_dups(q)] for q in sq]  # noqa: E731
        notes = "SimhashIndex(k=3) over all codes; get_near_dups per query (d <= k); pure Python"
    else:
        raise SystemExit("unknown W3 system " + s)
    hwm = vmhwm_kb()
    med, times, hits = timed(args.reps, op)
    put_hits(args, hits)
    return {"n": nq, "n_full": len(queries), "seconds": med, "times": times, "build_s": build_s,
            "rss_hwm_before_kb": hwm, "notes": notes}


def w4(args):
    codes = raw(args, "w4.codes.u64", np.uint64)
    n_full = len(codes)
    n = prefix(n_full, args.sub)  # the first n codes are the queries; pairs (i, j), i < n, i < j
    s = args.system
    if s.startswith("faiss-"):
        idx, build_s, notes = faiss_index(args, 64, u8(codes))
        xq = u8(codes[:n])

        def op():
            lims, _, ids = idx.range_search(xq, RADIUS + 1)
            qi = np.repeat(np.arange(n, dtype=np.int64), np.diff(lims).astype(np.int64))
            keep = qi < ids
            return np.stack([qi[keep], ids[keep]], 1)
        notes += ".range_search(every code, radius = 4); pairs i < j"
    elif s == "simlsh-py":
        import simlsh

        build_s = None
        c2 = np.ascontiguousarray(codes.reshape(-1, 1))

        def op():
            i, j, _ = simlsh.self_join(c2, RADIUS, bits=64, threads=args.threads)
            keep = i < n
            return np.stack([i[keep], j[keep]], 1)
        notes = "simlsh Python package: self_join(codes, 3) (pairs i < j; the first n as queries)"
    elif s == "simhash-1e0ng":
        from simhash import Simhash

        idx, build_s = simhash_index(codes)
        sq = [Simhash(int(q), f=64) for q in codes[:n].tolist()]

        def op():
            return np.array([(i, int(x)) for i, q in enumerate(sq) for x in idx.get_near_dups(q) if int(x) > i],
                            dtype=np.int64).reshape(-1, 2)
        notes = "SimhashIndex(k=3) over all codes; get_near_dups for each code; pairs i < j"
    else:
        raise SystemExit("unknown W4 system " + s)
    # the build is part of a self-join: timed as one with the queries
    hwm = vmhwm_kb()
    med, times, pairs = timed(args.reps, op)
    put(args, "pairs.i64", pairs.astype(np.int64))
    return {"n": n, "n_full": n_full, "seconds": med, "times": times, "build_s": build_s,
            "rss_hwm_before_kb": hwm, "notes": notes}


def w5(args):
    words = W5_BITS // 64
    index = raw(args, "w5.index.u64", np.uint64).reshape(-1, words)
    queries = raw(args, "w5.queries.u64", np.uint64).reshape(-1, words)
    nq = prefix(len(queries), args.sub)
    qs = queries[:nq]
    s = args.system
    build_s = None
    if s == "numpy-brute":
        def op():
            out = []
            for q in qs:
                d = np.bitwise_count(index ^ q).sum(axis=1, dtype=np.int64)
                top = np.argpartition(d, W5_K)[:W5_K]
                out.append(top[np.lexsort((top, d[top]))])
            return np.array(out)
        notes = "np.bitwise_count(index ^ q).sum(1) + argpartition per query"
    elif s == "simlsh-py":
        import simlsh

        t0 = time.perf_counter()
        idx = simlsh.LinearScan(bits=W5_BITS)
        idx.add(index, threads=args.threads)
        build_s = time.perf_counter() - t0
        q2 = np.ascontiguousarray(qs)
        op = lambda: idx.search(q2, W5_K, threads=args.threads)[1]  # noqa: E731
        notes = "simlsh Python package: LinearScan(bits=256).search(k = 10)"
    elif s == "faiss-flat":
        idx, build_s, notes = faiss_index(args, W5_BITS, u8(index))
        xq = u8(qs)
        op = lambda: idx.search(xq, W5_K)[1]  # noqa: E731
        notes += ".search(k = 10)"
    else:
        raise SystemExit("unknown W5 system " + s)
    hwm = vmhwm_kb()
    med, times, ids = timed(args.reps, op)
    put(args, "ids.i64", np.asarray(ids, dtype=np.int64))
    return {"n": nq, "n_full": len(queries), "seconds": med, "times": times, "build_s": build_s,
            "rss_hwm_before_kb": hwm, "notes": notes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("system")
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--f", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sub", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rec = {"w1": w1, "w2": w2, "w3": w3, "w4": w4, "w5": w5}[args.workload.lower()](args)
    rec["rss_hwm_end_kb"] = vmhwm_kb()
    print(json.dumps(rec, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
