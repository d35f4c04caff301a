#!/usr/bin/env python3
"""Real-data comparison of simlsh with its peers.

Tasks:
  1. Near-duplicate detection on the health-news tweets and on the Tang poems. Truth = every
     pair of (exact-duplicate-collapsed) documents whose exact TF-IDF cosine is >= tau
     (tau = 0.8, also 0.9). simlsh, datasketch MinHash LSH, simhash (1e0ng) and gaoya are
     scored on identical tokens: precision, recall, F1, time, peak memory.
  2. Cosine estimation on GloVe 6B 50d: per signer and width, the error of the estimated
     cosine cos(pi h / f) against the exact cosine, and recall@10 of the Hamming k-NN
     against the exact cosine top-10.

Usage (from the repository root):
  python benches/compare/realdata.py --simlsh target/release/simlsh --out OUT [--smoke] [--shared ../shared]

Writes OUT/realdata.json and OUT/realdata.md, prints the markdown, exits 1 if a check fails.
Every method runs in its own process (peak RSS = that process's VmHWM), single-threaded.
"""

import argparse
import json
import math
import os
import pickle
import re
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import textprep as tp  # noqa: E402
from compare import machine  # noqa: E402

TAUS = (0.8, 0.9)
TAU = TAUS[0]
NUM_PERM = 128
# Exact answers: the width and the recall planned at tau of simlsh's verified rows, and the F1
# they must reach (the goal).
VERIFY_BITS = 256
RECALL_TARGET = 0.99
F1_GOAL = 0.97
SIGNERS = ("gaussian", "super-bit", "rademacher", "very-sparse", "hashing-trick", "pooled")
GLOVE_BITS = (64, 256)
SEED = 0
# The recall floor is only asserted on enough truth pairs for the binomial spread to be small.
MIN_TRUTH_FOR_FLOOR = 50
N_SEEDS = 5
REF_SEEDS = (101, 102, 103)
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "RAYON_NUM_THREADS": "1",
    "PYTHONHASHSEED": "0",
}
for _k, _v in ONE_THREAD.items():
    os.environ.setdefault(_k, _v)


# ----------------------------------------------------------------------------- helpers


def radius_for(tau, f):
    """Largest r with cos(pi r / f) >= tau (simlsh's --cosine rule)."""
    r = int(math.floor(f * math.acos(tau) / math.pi))
    while math.cos(math.pi * (r + 1) / f) >= tau:
        r += 1
    while r > 0 and math.cos(math.pi * r / f) < tau:
        r -= 1
    return r


def jaccard_for(tau):
    """Jaccard of two equal-size sets whose binary cosine is tau: |A&B| = tau k, |A|B| = (2 - tau) k."""
    return tau / (2.0 - tau)


def binom_cdf(r, f, p):
    """P[Binomial(f, p) <= r] for an array p (exact sum of the pmf, float64)."""
    from scipy.stats import binom

    return binom.cdf(r, f, np.clip(p, 0.0, 1.0))


def run_child(cmd, log_prefix, env_extra=None):
    """Run cmd alone; returns dict(wall, cpu, peak_rss_mb, rc). Output goes to log files."""
    env = dict(os.environ)
    env.update(ONE_THREAD)
    if env_extra:
        env.update(env_extra)
    with open(f"{log_prefix}.stdout", "wb") as so, open(f"{log_prefix}.stderr", "wb") as se:
        t0 = time.perf_counter()
        p = subprocess.Popen([str(c) for c in cmd], stdout=so, stderr=se, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss of a child forked from this (large) process counts the parent's pages it held
    # before exec, so peak memory is the child's own VmHWM instead (simlsh --stats, workers).
    res = {"rc": p.returncode, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime}
    if p.returncode != 0:
        err = Path(f"{log_prefix}.stderr").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(map(str, cmd))}\n{err}")
    return res


def read_pairs_tsv(path):
    """simlsh --pairs TSV -> (i, j) 0-based (vector input: header row_a, 0-based; text: line_a, 1-based)."""
    with open(path) as fh:
        header = fh.readline().split("\t")
    base = 1 if header[0].startswith("line") else 0
    a = np.loadtxt(path, skiprows=1, usecols=(0, 1), dtype=np.int64, ndmin=2)
    if a.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), base
    i, j = a[:, 0] - base, a[:, 1] - base
    return np.minimum(i, j), np.maximum(i, j), base


def read_pairs_cos(path):
    """(i, j, cosine) of a verified `--pairs` TSV (record numbers, 0-based), i < j."""
    a = np.loadtxt(path, skiprows=1, usecols=(0, 1, 3), dtype=np.float64, ndmin=2)
    if a.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    i, j = a[:, 0].astype(np.int64), a[:, 1].astype(np.int64)
    return np.minimum(i, j), np.maximum(i, j), a[:, 2]


def keys_of(i, j, n):
    i = np.asarray(i, np.int64)
    j = np.asarray(j, np.int64)
    return np.unique(np.minimum(i, j) * n + np.maximum(i, j))


def score(pred_keys, truth_keys):
    tp_ = int(np.isin(pred_keys, truth_keys, assume_unique=True).sum())
    p = tp_ / len(pred_keys) if len(pred_keys) else 0.0
    r = tp_ / len(truth_keys) if len(truth_keys) else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"reported": int(len(pred_keys)), "true_pos": tp_, "precision": p, "recall": r, "f1": f1}


def hamming_pairs(codes_u64, radius):
    """All pairs i < j with Hamming <= radius, brute force (faiss IndexBinaryFlat range_search,
    which keeps d < radius, so it is called with radius + 1). Returns (i, j, d)."""
    import faiss

    codes = np.ascontiguousarray(codes_u64, dtype=np.uint64)
    n, w = codes.shape
    b = codes.view(np.uint8).reshape(n, 8 * w)
    idx = faiss.IndexBinaryFlat(64 * w)
    idx.add(b)
    lims, dist, ids = idx.range_search(b, radius + 1)
    q = np.repeat(np.arange(n, dtype=np.int64), np.diff(lims.astype(np.int64)))
    ids = ids.astype(np.int64)
    m = ids > q
    return q[m], ids[m], dist[m].astype(np.int64)


def hamming_np(a, b):
    """Hamming distances between rows of a (m x w) and b (n x w), uint64 words -> (m x n) int32."""
    out = np.zeros((a.shape[0], b.shape[0]), np.int32)
    for k in range(a.shape[1]):
        out += np.bitwise_count(a[:, k : k + 1] ^ b[None, :, k]).astype(np.int32)
    return out


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype=np.int32)
    d = int(raw[0])
    m = raw.reshape(-1, d + 1)
    assert (m[:, 0] == d).all(), f"{path}: ragged .vecs"
    return m[:, 1:].copy().view(dtype) if dtype == np.float32 else m[:, 1:].copy()


def write_fvecs(path, x):
    x = np.ascontiguousarray(x, dtype=np.float32)
    n, d = x.shape
    m = np.empty((n, d + 1), np.int32)
    m[:, 0] = d
    m[:, 1:] = x.view(np.int32)
    m.tofile(path)


def mb(x):
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def fmt(x, nd=3):
    return "–" if x is None else f"{x:.{nd}f}"


# ----------------------------------------------------------------------------- workers
# Each worker runs in its own process: it loads the prepared inputs, converts them to the
# peer's input type (outside the timers), runs the peer and writes result.json + arrays.


def worker(kind, wdir, params):
    wdir = Path(wdir)
    out = {"kind": kind, "params": params}
    rss0 = _rss_now_mb()
    if kind == "minhash":
        out.update(_w_minhash(wdir, params))
    elif kind == "rensa":
        out.update(_w_rensa(wdir, params))
    elif kind == "simhash1e0ng":
        out.update(_w_simhash(wdir, params))
    elif kind == "gaoya":
        out.update(_w_gaoya(wdir, params))
    else:
        raise SystemExit(f"unknown worker {kind}")
    out["rss_after_load_mb"] = out.pop("_rss_loaded", rss0)
    out["peak_rss_mb"] = _rss_now_mb()
    Path(params["result"]).write_text(json.dumps(out))


def _rss_now_mb():
    """Peak resident memory of this process so far (Linux VmHWM, reset by exec), MB."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _w_minhash(wdir, params):
    """MinHash once, then one MinHashLSH per threshold (the main one first, so that the peak
    memory read after it is that of one index)."""
    import gc

    from datasketch import MinHash, MinHashLSH

    with open(wdir / "tokens.pkl", "rb") as fh:
        toks = pickle.load(fh)
    sets = [sorted({t.encode("utf-8") for t in tk}) for tk in toks]
    loaded = _rss_now_mb()
    t0 = time.perf_counter()
    mhs = MinHash.bulk(sets, num_perm=NUM_PERM, seed=1)
    t_sign = time.perf_counter() - t0
    hv = np.stack([m.hashvalues for m in mhs])
    runs = []
    for thr, pairs_path in zip(params["jaccard"], params["pairs"]):
        t1 = time.perf_counter()
        lsh = MinHashLSH(threshold=thr, num_perm=NUM_PERM)
        with lsh.insertion_session() as s:
            for i, m in enumerate(mhs):
                s.insert(i, m, check_duplication=False)
        t2 = time.perf_counter()
        qi, qj = [], []
        for i, m in enumerate(mhs):
            for j in lsh.query(m):
                if j > i:
                    qi.append(i)
                    qj.append(j)
        t3 = time.perf_counter()
        qi = np.asarray(qi, np.int64)
        qj = np.asarray(qj, np.int64)
        est = np.zeros(len(qi))
        for s0 in range(0, len(qi), 100000):
            a, b = qi[s0 : s0 + 100000], qj[s0 : s0 + 100000]
            est[s0 : s0 + 100000] = (hv[a] == hv[b]).mean(axis=1)
        ok = est >= thr
        t4 = time.perf_counter()
        np.save(pairs_path, np.stack([qi, qj, ok.astype(np.int64)]))
        runs.append({"jaccard": thr, "bands": lsh.b, "rows_per_band": lsh.r, "peak_rss_mb": _rss_now_mb(),
                     "times": {"sign": t_sign, "index": t2 - t1, "query": t3 - t2, "verify": t4 - t3}})
        del lsh
        gc.collect()
    return {"runs": runs, "_rss_loaded": loaded}


def rensa_bands(thr, num_perm=NUM_PERM):
    """datasketch's choice of bands (the (b, r) minimising the equally weighted false-positive
    and false-negative areas of the S-curve at the threshold), restricted to the band counts
    rensa accepts: b divides num_perm, r = num_perm / b."""
    from datasketch.lsh import _false_negative_probability, _false_positive_probability

    best = None
    for b in (d for d in range(2, num_perm + 1) if num_perm % d == 0):
        r = num_perm // b
        err = 0.5 * _false_positive_probability(thr, b, r) + 0.5 * _false_negative_probability(thr, b, r)
        if best is None or err < best[0]:
            best = (err, b, r)
    return best[1], best[2]


def _w_rensa(wdir, params):
    """rensa (R-MinHash, full token sets): digests once, then one RMinHashLSH per threshold,
    candidates of every document's query, verified by the estimated Jaccard of the digests
    (the treatment of datasketch)."""
    import gc

    from rensa import RMinHash, RMinHashLSH

    with open(wdir / "tokens.pkl", "rb") as fh:
        toks = pickle.load(fh)
    sets = [sorted(set(tk)) for tk in toks]
    loaded = _rss_now_mb()
    t0 = time.perf_counter()
    mhs = RMinHash.from_token_sets(sets, num_perm=NUM_PERM, seed=1)
    t_sign = time.perf_counter() - t0
    hv = np.asarray([m.digest() for m in mhs], dtype=np.uint32)
    runs = []
    for thr, pairs_path in zip(params["jaccard"], params["pairs"]):
        b, r = rensa_bands(thr)
        t1 = time.perf_counter()
        lsh = RMinHashLSH(threshold=thr, num_perm=NUM_PERM, num_bands=b)
        lsh.insert_many(mhs, 0)
        t2 = time.perf_counter()
        qi, qj = [], []
        for i, cands in enumerate(lsh.query_all(mhs)):
            for j in cands:
                if j > i:
                    qi.append(i)
                    qj.append(j)
        t3 = time.perf_counter()
        qi = np.asarray(qi, np.int64)
        qj = np.asarray(qj, np.int64)
        est = np.zeros(len(qi))
        for s0 in range(0, len(qi), 100000):
            a, c = qi[s0 : s0 + 100000], qj[s0 : s0 + 100000]
            est[s0 : s0 + 100000] = (hv[a] == hv[c]).mean(axis=1)
        ok = est >= thr
        t4 = time.perf_counter()
        np.save(pairs_path, np.stack([qi, qj, ok.astype(np.int64)]))
        runs.append({"jaccard": thr, "bands": b, "rows_per_band": r, "peak_rss_mb": _rss_now_mb(),
                     "times": {"sign": t_sign, "index": t2 - t1, "query": t3 - t2, "verify": t4 - t3}})
        del lsh
        gc.collect()
    return {"runs": runs, "_rss_loaded": loaded}


def _load_weighted(wdir):
    x = sp.load_npz(wdir / "tfidf.npz").tocsr()
    names = np.load(wdir / "features.npy", allow_pickle=False)
    feats = []
    for i in range(x.shape[0]):
        lo, hi = x.indptr[i], x.indptr[i + 1]
        feats.append([(str(names[c]), float(v)) for c, v in zip(x.indices[lo:hi], x.data[lo:hi])])
    return feats


def _query_sample(n, k):
    """The documents whose index queries are timed (and checked): a seeded random sample of
    min(k, n), in increasing order, so that the extrapolated time is not that of the first
    documents only."""
    return np.sort(np.random.default_rng(12345).choice(n, size=min(k, n), replace=False))


def _w_simhash(wdir, params):
    import logging

    from simhash import Simhash, SimhashIndex

    logging.getLogger("simhash").setLevel(logging.ERROR)
    feats = _load_weighted(wdir)
    loaded = _rss_now_mb()
    r, nq = params["radius"], params["queries"]
    t0 = time.perf_counter()
    sh = [Simhash(fs, f=64) for fs in feats]
    t1 = time.perf_counter()
    index = SimhashIndex([(str(i), s) for i, s in enumerate(sh)], f=64, k=r)
    t2 = time.perf_counter()
    qids = _query_sample(len(sh), nq)
    answers = [[int(i), [int(j) for j in index.get_near_dups(sh[i])]] for i in qids]
    t3 = time.perf_counter()
    codes = np.array([s.value for s in sh], dtype=np.uint64).reshape(-1, 1)
    np.save(params["codes"], codes)
    # The radius call: a fingerprint at distance exactly r must be found, one at r + 1 not.
    a = sh[0].value
    spots = [(k * 64) // (r + 1) for k in range(r + 1)]
    near = a ^ sum(1 << s for s in spots[:r])
    far = a ^ sum(1 << s for s in spots)
    tiny = SimhashIndex([("near", Simhash(near, f=64)), ("far", Simhash(far, f=64))], f=64, k=r)
    got = sorted(tiny.get_near_dups(Simhash(a, f=64)))
    return {
        "times": {"sign": t1 - t0, "index": t2 - t1, "query_prefix": t3 - t2},
        "queries": len(qids),
        "answers": answers,
        "radius_check": {"found": got, "expected": ["near"]},
        "_rss_loaded": loaded,
    }


def _w_gaoya(wdir, params):
    import gaoya

    with open(wdir / "tokens.pkl", "rb") as fh:
        toks = pickle.load(fh)
    names = np.load(wdir / "features.npy", allow_pickle=False)
    fid = {str(t): k for k, t in enumerate(names)}
    # gaoya's own text analyzer splits on punctuation and '_', so the features are handed over
    # as surrogate tokens "w<feature id>" (alphanumeric): insert_tokens and doc2signature then
    # hash the same strings (checked on the queried sample against the index's distances).
    sur = [[f"w{fid[t]}" for t in tk] for tk in toks]
    joined = [" ".join(s) for s in sur]
    loaded = _rss_now_mb()
    r, nq = params["radius"], params["queries"]
    blocks = r + 2
    index = gaoya.gaoya.simhash.SimHash64StringIntIndex(blocks, r + 1, "word", False, None)
    t0 = time.perf_counter()
    for i, s in enumerate(sur):
        index.insert_tokens(i, s)
    t1 = time.perf_counter()
    qids = _query_sample(len(sur), nq)
    answers = [[int(i), [[int(j), int(d)] for j, d in index.query_tokens_return_distance(sur[i])]] for i in qids]
    t2 = time.perf_counter()
    codes = np.array([index.doc2signature(d) for d in joined], dtype=np.uint64).reshape(-1, 1)
    t3 = time.perf_counter()
    np.save(params["codes"], codes)
    return {
        "blocks": blocks,
        "hamming_distance_arg": r + 1,
        "times": {"index": t1 - t0, "query_prefix": t2 - t1, "sign": t3 - t2},
        "queries": len(qids),
        "answers": answers,
        "_rss_loaded": loaded,
    }


# ----------------------------------------------------------------------------- text tasks


class Checks:
    def __init__(self):
        self.items = []

    def check(self, name, ok, detail):
        self.items.append({"check": name, "ok": bool(ok), "detail": detail})
        print(f"[{'ok' if ok else 'FAIL'}] {name}: {detail}", file=sys.stderr)

    @property
    def failed(self):
        return [c for c in self.items if not c["ok"]]


def prepare_text(name, spec, wdir, smoke, checks):
    wdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    texts = tp.load_texts(spec["path"], limit=spec.get("limit"))
    tok = tp.library_tokenize(spec["lang"])
    norm = tp.normalise_en if spec["lang"] == "en" else tp.normalise_zh
    toks, lines, _, n_dup, n_empty = tp.collapse(texts, tok, norm)
    x, names = tp.tfidf(toks)
    t1 = time.perf_counter()
    sp.save_npz(wdir / "tfidf.npz", x, compressed=False)
    np.save(wdir / "features.npy", np.asarray(names, dtype=str))
    with open(wdir / "tokens.pkl", "wb") as fh:
        pickle.dump(toks, fh, protocol=pickle.HIGHEST_PROTOCOL)
    (wdir / "docs.txt").write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    t2 = time.perf_counter()
    ti, tj, tc, info = tp.truth_pairs(x, min(TAUS))
    t3 = time.perf_counter()
    n = x.shape[0]
    if smoke:
        di, dj, _ = tp.truth_pairs_dense(x, min(TAUS))
        same = np.array_equal(keys_of(ti, tj, n), keys_of(di, dj, n))
        checks.check(f"{name}: blocked truth = dense X.X^T", same, f"{len(ti)} vs {len(di)} pairs")
    truth = {}
    for tau in TAUS:
        m = tc >= tau
        truth[tau] = {"keys": ti[m] * n + tj[m], "cos": tc[m]}
        checks.check(f"{name}: truth at tau={tau} non-empty", m.sum() > 0, f"{int(m.sum())} pairs")
    meta = {
        "dataset": name,
        "source": spec["label"],
        "documents_read": len(texts),
        "exact_duplicates_collapsed": n_dup,
        "empty_dropped": n_empty,
        "documents": n,
        "features": int(x.shape[1]),
        "nonzeros": int(x.nnz),
        "truth_pairs": {str(t): int(len(truth[t]["keys"])) for t in TAUS},
        "prep_seconds": t1 - t0,
        "truth_seconds": t3 - t2,
        "truth_split": info,
    }
    return n, truth, meta


PLAN_LINE = re.compile(r"verified on (\d+) candidates from (?:(\d+) bands of (\d+) bits|radius (\d+))"
                       r".*?planned recall ([0-9.]+)")


def dedup_plan(stderr_text):
    """The candidate plan of a verified `simlsh dedup` run, from its summary line (its --stats
    JSON does not record it): {"bands", "band_bits"} or {"radius"}, and "planned_recall"."""
    m = PLAN_LINE.search(stderr_text)
    if not m:
        return {}
    out = {"planned_recall": float(m.group(5))}
    if m.group(2):
        out.update(bands=int(m.group(2)), band_bits=int(m.group(3)))
    else:
        out["radius"] = int(m.group(4))
    return out


def run_simlsh_dedup(binary, wdir, tag, inp, bits, tau, extra, seed=SEED):
    pairs, stats = wdir / f"{tag}.pairs.tsv", wdir / f"{tag}.stats.json"
    # Not --quiet: the summary line (standard output) names the plan.
    cmd = [binary, "dedup", inp, "--bits", bits, "--cosine", tau, "--pairs", pairs, "--stats", stats,
           "--threads", 1, "--seed", seed, *extra]
    proc = run_child(cmd, wdir / tag)
    st = json.loads(stats.read_text())
    st["plan"] = dedup_plan(Path(f"{wdir / tag}.stdout").read_text(errors="replace"))
    proc["peak_rss_mb"] = st["peak_rss_bytes"] / 2**20
    i, j, base = read_pairs_tsv(pairs)
    ph = st["phases_seconds"]
    t = sum(v for k, v in ph.items() if k != "read")
    return i, j, {"proc": proc, "stats": st, "time_s": t, "line_base": base, "cmd": " ".join(map(str, cmd))}


def ideal_recall(cos, f, r):
    """Expected recall of ideal random-hyperplane signatures: mean of P[Binomial(f, angle/pi) <= r]."""
    p = np.arccos(np.clip(cos, -1, 1)) / math.pi
    q = binom_cdf(r, f, p)
    return float(q.mean())


def text_task(name, spec, args, checks):
    wdir = Path(args.out) / "work" / name
    n, truth, meta = prepare_text(name, spec, wdir, args.smoke, checks)
    binary = args.simlsh
    rows = {tau: [] for tau in TAUS}
    r64 = {tau: radius_for(tau, 64) for tau in TAUS}
    r256 = {tau: radius_for(tau, 256) for tau in TAUS}
    tk = {tau: truth[tau]["keys"] for tau in TAUS}
    text_extra = tp.CLI_TEXT[spec["lang"]]

    def add(tau, method, features, params, pred_keys, time_s, proc, notes="", ideal=None, extra=None):
        row = {"method": method, "features": features, "params": params, **score(pred_keys, tk[tau]),
               "time_s": time_s, "cpu_s": proc.get("cpu_s") if proc else None,
               "peak_rss_mb": proc.get("peak_rss_mb") if proc else None, "notes": notes}
        if ideal is not None:
            row["ideal_recall"] = ideal
        if extra:
            row.update(extra)
        rows[tau].append(row)
        return row

    # --- simlsh on the TF-IDF matrix (hashing trick 64/256 bits, Gaussian 64 bits), and its
    # own text pipeline. The 64-bit rows at the main tau are repeated over SEEDS: the recall of
    # one seed moves by several points (truth pairs come in large clusters of near-identical
    # tweets that share every hyperplane), so the law is checked on the mean.
    seeds = list(range(N_SEEDS))
    for tau in TAUS:
        for signer, bits, rr in (("hashing-trick", 64, r64[tau]), ("hashing-trick", 256, r256[tau]),
                                 ("gaussian", 64, r64[tau])):
            i, j, res = run_simlsh_dedup(binary, wdir, f"simlsh-{signer}-{bits}-{tau}", wdir / "tfidf.npz", bits,
                                         tau, ["--signer", signer, "--no-verify"])
            got_r = res["stats"]["values"]["radius"]
            if signer == "hashing-trick":
                checks.check(f"{name}: simlsh --cosine {tau} at f={bits} gives radius floor(f acos(tau)/pi)",
                             got_r == rr, f"simlsh {got_r}, formula {rr}")
            ir = ideal_recall(truth[tau]["cos"], bits, rr)
            row = add(tau, f"simlsh dedup, {signer}, {bits} bit", "TF-IDF matrix (npz)",
                      f"r = {rr}", keys_of(i, j, n), res["time_s"], res["proc"], ideal=ir,
                      extra={"process_wall_s": res["proc"]["wall_s"], "simlsh_stats": res["stats"]})
            if tau != TAU or len(tk[tau]) < MIN_TRUTH_FOR_FLOOR:
                continue
            if bits == 256:
                checks.check(f"{name}: simlsh {signer} {bits}-bit recall at tau={tau} >= ideal - 0.1",
                             row["recall"] >= ir - 0.1, f"recall {row['recall']:.3f}, ideal {ir:.3f}")
                continue
            rec = [row["recall"]]
            for seed in seeds[1:]:
                i, j, _ = run_simlsh_dedup(binary, wdir, f"simlsh-{signer}-{bits}-{tau}-s{seed}",
                                           wdir / "tfidf.npz", bits, tau, ["--signer", signer, "--no-verify"],
                                           seed=seed)
                rec.append(score(keys_of(i, j, n), tk[tau])["recall"])
            mean, sd = float(np.mean(rec)), float(np.std(rec, ddof=1))
            row["seed_recalls"] = rec
            row["seed_recall"] = f"{mean:.3f} ± {sd:.3f}"
            if signer == "gaussian":
                checks.check(f"{name}: simlsh gaussian 64-bit mean recall over {len(rec)} seeds = binomial law "
                             f"+- 0.05 (tau={tau})", abs(mean - ir) <= 0.05, f"mean {mean:.3f}, ideal {ir:.3f}")
            else:
                checks.check(f"{name}: simlsh hashing-trick 64-bit mean recall over {len(rec)} seeds >= "
                             f"binomial law - 0.08 (tau={tau})", mean >= ir - 0.08, f"mean {mean:.3f}, ideal {ir:.3f}")
        i, j, res = run_simlsh_dedup(binary, wdir, f"simlsh-text-{tau}", wdir / "docs.txt", 64, tau,
                                     text_extra + ["--no-verify"])
        add(tau, "simlsh dedup, text pipeline, 64 bit", "its own tokenizer + IDF on the same texts: "
            + " ".join(text_extra), f"r = {r64[tau]}", keys_of(i, j, n), res["time_s"], res["proc"],
            ideal=ideal_recall(truth[tau]["cos"], 64, r64[tau]),
            extra={"process_wall_s": res["proc"]["wall_s"], "simlsh_stats": res["stats"]})

        # --- exact answers: candidates planned for RECALL_TARGET at tau, verified by the exact
        # cosine of the same vectors as the truth's (the text's own features, or the matrix);
        # beside each, the unverified run at the same width (pairs by estimated cosine).
        # The text rows: the default signer (hashing trick) and the hashed Gaussian one.
        for kind, inp, opts in (("text", wdir / "docs.txt", text_extra),
                                ("text, hashed-gaussian", wdir / "docs.txt",
                                 text_extra + ["--signer", "hashed-gaussian"]),
                                ("matrix", wdir / "tfidf.npz", ["--signer", "hashing-trick"])):
            feats = ("its own tokenizer + IDF: " + " ".join(text_extra)) if kind.startswith("text") \
                else "TF-IDF matrix (npz)"
            tag = f"simlsh-{kind.replace(', ', '-')}-{VERIFY_BITS}-{tau}"
            i, j, ru = run_simlsh_dedup(binary, wdir, tag + "-estimated", inp, VERIFY_BITS, tau, opts + ["--no-verify"])
            row_u = add(tau, f"simlsh dedup, {kind}, {VERIFY_BITS} bit, estimated cosine (--no-verify)", feats,
                        f"r = {r256[tau]}", keys_of(i, j, n), ru["time_s"], ru["proc"],
                        ideal=ideal_recall(truth[tau]["cos"], VERIFY_BITS, r256[tau]),
                        extra={"process_wall_s": ru["proc"]["wall_s"], "simlsh_stats": ru["stats"]})
            i, j, rv = run_simlsh_dedup(binary, wdir, tag + "-verified", inp, VERIFY_BITS, tau,
                                        opts + ["--recall", RECALL_TARGET])
            v, pl = rv["stats"]["values"], rv["stats"]["plan"]
            how = (f"{pl['bands']} bands of {pl['band_bits']} bits" if pl.get("bands") else
                   f"r = {pl.get('radius')}") + f" (recall {pl.get('planned_recall', float('nan')):.3f})"
            row_v = add(tau, f"**simlsh dedup, {kind}, {VERIFY_BITS} bit, exact cosine (verified)**", feats,
                        f"--recall {RECALL_TARGET}: {how}; {v['candidates']} candidates", keys_of(i, j, n),
                        rv["time_s"], rv["proc"],
                        extra={"process_wall_s": rv["proc"]["wall_s"], "simlsh_stats": rv["stats"],
                               "vs_estimated": {"time": rv["time_s"] / max(ru["time_s"], 1e-9),
                                                "cpu": rv["proc"]["cpu_s"] / max(ru["proc"]["cpu_s"], 1e-9)}})
            row_v["seed_recall"] = (f"time {row_v['vs_estimated']['time']:.2f}x, CPU "
                                    f"{row_v['vs_estimated']['cpu']:.2f}x the estimate")
            # The same vectors: every reported cosine equals the truth's exact cosine.
            ci, cj, cc = read_pairs_cos(wdir / f"{tag}-verified.pairs.tsv")
            kt = truth[tau]["keys"]
            pos = np.searchsorted(kt, ci * n + cj)
            pos = np.minimum(pos, max(len(kt) - 1, 0))
            inside = (kt[pos] == ci * n + cj) if len(kt) else np.zeros(len(ci), bool)
            diff = float(np.abs(cc[inside] - truth[tau]["cos"][pos[inside]]).max()) if inside.any() else 0.0
            checks.check(f"{name}: simlsh {kind} verified cosines = the truth's exact cosines (tau={tau})",
                         diff <= 2e-6 and bool(np.all(cc >= tau)),
                         f"max |difference| {diff:.2e} over {int(inside.sum())} pairs; min cosine "
                         f"{cc.min() if len(cc) else float('nan'):.6f}")
            outside = int((~inside).sum())
            checks.check(f"{name}: simlsh {kind} verified pairs are all in the truth (tau={tau})", outside == 0,
                         f"{outside} reported pairs not in the truth")
            if len(tk[tau]) >= MIN_TRUTH_FOR_FLOOR:
                checks.check(f"{name}: simlsh {kind} verified F1 >= {F1_GOAL} (tau={tau})",
                             row_v["f1"] >= F1_GOAL, f"F1 {row_v['f1']:.4f}, recall {row_v['recall']:.4f}")

    # simlsh's join is exact: its pairs equal brute force on the signatures `simlsh sign` writes.
    sig = wdir / "simlsh-64.npy"
    run_child([binary, "sign", wdir / "tfidf.npz", sig, "--bits", 64, "--signer", "hashing-trick", "--seed", SEED,
               "--threads", 1, "--quiet"], wdir / "simlsh-sign")
    codes = np.load(sig)
    bi, bj, _ = hamming_pairs(codes, r64[TAU])
    di, dj, _ = read_pairs_tsv(wdir / f"simlsh-hashing-trick-64-{TAU}.pairs.tsv")
    checks.check(f"{name}: simlsh dedup pairs = brute-force Hamming <= r on simlsh sign's signatures",
                 np.array_equal(keys_of(bi, bj, n), keys_of(di, dj, n)), f"{len(di)} vs {len(bi)} pairs")

    # --- MinHash LSH on token sets, at the Jaccard matched to tau: datasketch (pure Python) and
    # rensa (R-MinHash in Rust), the same treatment: every candidate of each document's query,
    # then the candidates whose estimated Jaccard reaches the threshold.
    for worker_kind, label in (("minhash", "datasketch MinHashLSH"), ("rensa", "rensa 0.5 RMinHashLSH")):
        res_path = wdir / f"{worker_kind}.json"
        pair_paths = [str(wdir / f"{worker_kind}-{tau}.npy") for tau in TAUS]
        proc = run_child([sys.executable, __file__, "--worker", worker_kind, "--dir", wdir, "--params",
                          json.dumps({"jaccard": [jaccard_for(t) for t in TAUS], "result": str(res_path),
                                      "pairs": pair_paths})], wdir / worker_kind)
        res = json.loads(res_path.read_text())
        for tau, run, pp in zip(TAUS, res["runs"], pair_paths):
            qi, qj, ok = np.load(pp)
            ti = run["times"]
            base_t = ti["sign"] + ti["index"] + ti["query"]
            prm = f"J = {run['jaccard']:.3f}, {NUM_PERM} perm, b = {run['bands']}, r = {run['rows_per_band']}"
            extra = {"rss_after_load_mb": res["rss_after_load_mb"], "times": ti}
            pr = dict(proc, peak_rss_mb=run["peak_rss_mb"])
            add(tau, f"{label}, candidates", "token sets", prm, keys_of(qi, qj, n), base_t, pr, extra=extra)
            add(tau, f"{label}, verified", "token sets", prm + ", est. J >= thr",
                keys_of(qi[ok == 1], qj[ok == 1], n), base_t + ti["verify"], pr, extra=extra)

    # --- simhash (1e0ng), TF-IDF weighted features, 64 bit
    nq = 5 if args.smoke else 40
    proc, res, codes, (bi, bj, bd) = _peer_child(wdir, "simhash1e0ng", "simhash", r64[TAU], nq)
    rc = res["radius_check"]
    checks.check(f"{name}: simhash SimhashIndex(k=r) answers distance <= r (r={r64[TAU]})",
                 rc["found"] == rc["expected"], f"found {rc['found']} for fingerprints at r and r+1")
    _check_answers(checks, name, "simhash SimhashIndex", res["answers"], codes, r64[TAU], with_dist=False)
    ti = res["times"]
    q_full = ti["query_prefix"] * n / res["queries"]
    for tau in TAUS:
        m = bd <= r64[tau]
        ir = ideal_recall(truth[tau]["cos"], 64, r64[tau])
        add(tau, "simhash 2.1.2 (1e0ng), 64 bit", "TF-IDF weighted tokens", f"r = {r64[tau]}",
            keys_of(bi[m], bj[m], n), ti["sign"] + ti["index"] + q_full if tau == TAU else None, proc,
            notes=f"pairs by brute force over its fingerprints; SimhashIndex(k={r64[TAU]}) time: "
                  f"{res['queries']} queries timed, extrapolated to {n}", ideal=ir,
            extra={"rss_after_load_mb": res["rss_after_load_mb"], "times": ti, "extrapolated": True})

    # --- gaoya, unweighted tokens (its only mode), 64 bit
    nqg = 200 if args.smoke else 1000
    proc, res, codes, (bi, bj, bd) = _peer_child(wdir, "gaoya", "gaoya", r64[TAU], nqg)
    _check_answers(checks, name, "gaoya SimHashIndex(hamming_distance=r+1)", res["answers"], codes, r64[TAU],
                   with_dist=True)
    ti = res["times"]
    q_full = ti["query_prefix"] * n / res["queries"]
    for tau in TAUS:
        m = bd <= r64[tau]
        add(tau, "gaoya 0.2.2, 64 bit", "unweighted tokens (no weights in its API)", f"r = {r64[tau]}",
            keys_of(bi[m], bj[m], n), ti["index"] + q_full if tau == TAU else None, proc,
            notes=f"pairs by brute force over its fingerprints; index ({res['blocks']} blocks, "
                  f"hamming_distance={res['hamming_distance_arg']}) time: insert all + {res['queries']} queries "
                  f"extrapolated to {n}",
            extra={"rss_after_load_mb": res["rss_after_load_mb"], "times": ti, "extrapolated": True})
    meta["radius_64"] = {str(t): r64[t] for t in TAUS}
    meta["radius_256"] = {str(t): r256[t] for t in TAUS}
    return {"meta": meta, "rows": {str(t): rows[t] for t in TAUS}}


def _peer_child(wdir, worker, stem, radius, queries):
    """Runs a peer worker in its own process; returns its process record, its result, its
    fingerprints and their brute-force pairs within `radius`."""
    res_path, codes_path = wdir / f"{stem}.json", wdir / f"{stem}-codes.npy"
    proc = run_child([sys.executable, __file__, "--worker", worker, "--dir", wdir, "--params",
                      json.dumps({"radius": radius, "queries": queries, "result": str(res_path),
                                  "codes": str(codes_path)})], wdir / stem)
    res = json.loads(res_path.read_text())
    proc["peak_rss_mb"] = res["peak_rss_mb"]
    codes = np.load(codes_path)
    return proc, res, codes, hamming_pairs(codes, radius)


def _check_answers(checks, name, label, answers, codes, r, with_dist):
    """The index's answers for the queried sample must be exactly the brute-force neighbours."""
    c = codes[:, 0]
    missing = extra = wrong_d = 0
    for i, ans in answers:
        d = np.bitwise_count(c ^ c[i]).astype(np.int64)
        want = set(np.flatnonzero(d <= r).tolist()) - {i}
        if with_dist:
            got = {j for j, _ in ans} - {i}
            wrong_d += sum(1 for j, dd in ans if d[j] != dd)
        else:
            got = set(ans) - {i}
        missing += len(want - got)
        extra += len(got - want)
    checks.check(f"{name}: {label} answers = brute force at Hamming <= {r} ({len(answers)} queries)",
                 missing == 0 and extra == 0 and wrong_d == 0,
                 f"missing {missing}, beyond radius {extra}, wrong distances {wrong_d}")


# ----------------------------------------------------------------------------- GloVe task


def glove_task(args, shared, checks):
    wdir = Path(args.out) / "work" / "glove"
    wdir.mkdir(parents=True, exist_ok=True)
    big = shared / "datasets" / "glove-6B-50d-100k"
    small = ROOT / "datasets" / "glove-6B-50d-10k" / "vectors.fvecs"
    if args.smoke or not (big / "base.fvecs").exists():
        x = read_vecs(small, np.float32)
        nq = 50 if args.smoke else 1000
        nb = 1000 if args.smoke else len(x) - nq
        query, base = x[:nq], x[nq : nq + nb]
        label = (f"bundled `datasets/glove-6B-50d-10k`: rows 0..{nq - 1} as queries, the next {nb} as base")
        gt = None
    else:
        base = read_vecs(big / "base.fvecs", np.float32)
        query = read_vecs(big / "query.fvecs", np.float32)
        gt = read_vecs(big / "gt_cosine_top100.ivecs", np.int32)
        label = "`../shared/datasets/glove-6B-50d-100k`: 100,000 base, 1,000 queries (not in the base)"
    write_fvecs(wdir / "base.fvecs", base)
    write_fvecs(wdir / "query.fvecs", query)
    write_fvecs(wdir / "base-head.fvecs", base[:100])
    bn = base.astype(np.float64) / np.linalg.norm(base.astype(np.float64), axis=1, keepdims=True)
    qn = query.astype(np.float64) / np.linalg.norm(query.astype(np.float64), axis=1, keepdims=True)
    sims = qn @ bn.T
    order = np.argsort(-sims, axis=1, kind="stable")[:, :10]
    if gt is not None:
        # gt ids: 0-based base rows, the query itself is not in the base; ties may swap places.
        same = np.mean([len(set(order[q]) & set(gt[q, :10])) / 10 for q in range(len(qn))])
        kth = np.take_along_axis(sims, gt[:, 9:10].astype(np.int64), 1)[:, 0]
        ok = same >= 0.999 and np.allclose(kth, np.take_along_axis(sims, order[:, 9:10], 1)[:, 0], atol=1e-6)
        checks.check("glove: shared gt_cosine_top100 = our exact cosine top-10 (0-based ids)", ok,
                     f"mean overlap {same:.4f}")
        top10 = gt[:, :10].astype(np.int64)
    else:
        top10 = order
    rng = np.random.default_rng(7)
    npairs = 100
    rnd_b = rng.integers(0, len(base), size=(len(query), npairs))
    rnd_cos = np.take_along_axis(sims, rnd_b, 1)
    nn_cos = np.take_along_axis(sims, top10, 1)

    def evaluate(qc, bc, f):
        h_r = np.zeros(rnd_b.shape, np.int64)
        h_n = np.zeros(top10.shape, np.int64)
        hits = 0
        nb_ = bc.shape[0]
        for s0 in range(0, len(qc), 100):
            hd = hamming_np(qc[s0 : s0 + 100], bc)
            h_r[s0 : s0 + 100] = np.take_along_axis(hd, rnd_b[s0 : s0 + 100], 1)
            h_n[s0 : s0 + 100] = np.take_along_axis(hd, top10[s0 : s0 + 100], 1)
            key = hd.astype(np.int64) * nb_ + np.arange(nb_)[None, :]
            top = np.argpartition(key, 10, axis=1)[:, :10]
            for q in range(top.shape[0]):
                hits += len(set(top[q].tolist()) & set(top10[s0 + q].tolist()))
        est_r = np.cos(math.pi * h_r / f)
        est_n = np.cos(math.pi * h_n / f)
        return {
            "mae_random": float(np.abs(est_r - rnd_cos).mean()),
            "mae_top10": float(np.abs(est_n - nn_cos).mean()),
            "bias_random": float((est_r - rnd_cos).mean()),
            "recall_at_10": hits / (10.0 * len(qc)),
        }

    def ideal_mae(cos, f):
        th = np.arccos(np.clip(cos.ravel(), -1, 1)) / math.pi
        from scipy.stats import binom

        hs = np.arange(f + 1)
        pmf = binom.pmf(hs[None, :], f, th[:, None])
        err = np.abs(np.cos(math.pi * hs / f)[None, :] - cos.ravel()[:, None])
        return float((pmf * err).sum(axis=1).mean())

    rows = []
    for f in GLOVE_BITS:
        ideal = {"mae_random": ideal_mae(rnd_cos, f), "mae_top10": ideal_mae(nn_cos, f)}
        for signer in SIGNERS:
            tag = f"{signer}-{f}"
            common = ["--signer", signer, "--bits", f, "--seed", SEED, "--threads", 1, "--quiet"]
            run_child([args.simlsh, "sign", wdir / "base.fvecs", wdir / f"{tag}.base.npy", *common,
                           "--stats", wdir / f"{tag}.base.stats.json"], wdir / f"{tag}.base")
            run_child([args.simlsh, "sign", wdir / "query.fvecs", wdir / f"{tag}.query.npy", *common],
                      wdir / f"{tag}.query")
            run_child([args.simlsh, "sign", wdir / "base-head.fvecs", wdir / f"{tag}.head.npy", *common],
                      wdir / f"{tag}.head")
            bc, qc, hc = (np.load(wdir / f"{tag}.{s}.npy") for s in ("base", "query", "head"))
            checks.check(f"glove: {tag} signatures depend on the row only (file of 100 rows = base rows)",
                         np.array_equal(hc, bc[:100]), "")
            st = json.loads((wdir / f"{tag}.base.stats.json").read_text())
            ev = evaluate(qc, bc, f)
            e = json.loads(_simlsh_eval(args, wdir, signer, f, small).read_text())["values"]
            rows.append({"signer": f"simlsh {signer}", "bits": f, **ev, "sign_s": st["phases_seconds"]["sign"],
                         "ideal_mae_random": ideal["mae_random"], "ideal_mae_top10": ideal["mae_top10"],
                         "simlsh_eval_mae": e["mae_cosine"], "simlsh_eval_recall": e["recall"]})
        # Reference: numpy Gaussian hyperplanes (independent of simlsh), mean over REF_SEEDS seeds.
        refs = []
        for rs in REF_SEEDS:
            hyper = np.random.default_rng(rs).standard_normal((base.shape[1], f))
            t0 = time.perf_counter()
            bc = _pack_signs(base.astype(np.float64) @ hyper)
            t1 = time.perf_counter()
            refs.append(dict(evaluate(_pack_signs(query.astype(np.float64) @ hyper), bc, f), sign_s=t1 - t0))
        ref = {k: float(np.mean([r_[k] for r_ in refs])) for k in refs[0]}
        ref["recall_sd"] = float(np.std([r_["recall_at_10"] for r_ in refs], ddof=1))
        rows.append({"signer": f"numpy Gaussian reference (mean of {len(REF_SEEDS)} seeds)", "bits": f, **ref,
                     "ideal_mae_random": ideal["mae_random"], "ideal_mae_top10": ideal["mae_top10"],
                     "simlsh_eval_mae": None, "simlsh_eval_recall": None})
        import faiss

        faiss.omp_set_num_threads(1)
        t0 = time.perf_counter()
        ix = faiss.IndexLSH(base.shape[1], f, True, False)
        ix.train(base)
        bc8 = ix.sa_encode(base)
        t1 = time.perf_counter()
        qc8 = ix.sa_encode(query)
        ev = evaluate(_u8_to_u64(qc8), _u8_to_u64(bc8), f)
        rows.append({"signer": "faiss IndexLSH (rotate_data=True)", "bits": f, **ev, "sign_s": t1 - t0,
                     "ideal_mae_random": ideal["mae_random"], "ideal_mae_top10": ideal["mae_top10"],
                     "simlsh_eval_mae": None, "simlsh_eval_recall": None})
    by = {(r["signer"], r["bits"]): r for r in rows}
    g64, g256 = by[("simlsh gaussian", 64)], by[("simlsh gaussian", 256)]
    # All pairs share the same f hyperplanes, so the MAE of one seed scatters around the law:
    # a few percent on 1000 queries x 100 pairs, more on the 50 queries of --smoke.
    tol = 0.20 if args.smoke else 0.05
    for f, g in ((64, g64), (256, g256)):
        rel = abs(g["mae_random"] - g["ideal_mae_random"]) / g["ideal_mae_random"]
        checks.check(f"glove: gaussian {f}-bit MAE within {tol:.0%} of the binomial law", rel <= tol,
                     f"MAE {g['mae_random']:.4f}, ideal {g['ideal_mae_random']:.4f}")
    for f, g in ((64, g64), (256, g256)):
        ref = by[(f"numpy Gaussian reference (mean of {len(REF_SEEDS)} seeds)", f)]
        floor = ref["recall_at_10"] - max(0.02, 3 * ref["recall_sd"])
        checks.check(f"glove: gaussian {f}-bit recall@10 >= numpy Gaussian reference - max(0.02, 3 sd)",
                     g["recall_at_10"] >= floor,
                     f"{g['recall_at_10']:.3f}, reference {ref['recall_at_10']:.3f} ± {ref['recall_sd']:.3f}")
    checks.check("glove: gaussian recall@10 at 256 bits > at 64 bits", g256["recall_at_10"] > g64["recall_at_10"],
                 f"{g256['recall_at_10']:.3f} vs {g64['recall_at_10']:.3f}")
    return {"source": label, "base": int(len(base)), "queries": int(len(query)), "random_pairs_per_query": npairs,
            "rows": rows}


def _simlsh_eval(args, wdir, signer, f, small):
    stats = wdir / f"eval-{signer}-{f}.json"
    q = 50 if args.smoke else 200
    run_child([args.simlsh, "eval", small, "--signer", signer, "--bits", f, "--seed", SEED, "--threads", 1,
               "--quiet", "--queries", q, "--pairs", 2000 if args.smoke else 10000, "--stats", stats],
              wdir / f"eval-{signer}-{f}")
    return stats


def _pack_signs(proj):
    """Bit j of a row = (projection j > 0), packed LSB-first into uint64 words."""
    bits = proj > 0
    n, f = bits.shape
    pad = (-f) % 64
    if pad:
        bits = np.concatenate([bits, np.zeros((n, pad), bool)], axis=1)
    return np.ascontiguousarray(np.packbits(bits, axis=1, bitorder="little")).view(np.uint64)


def _u8_to_u64(c8):
    n, b = c8.shape
    pad = (-b) % 8
    if pad:
        c8 = np.concatenate([c8, np.zeros((n, pad), np.uint8)], axis=1)
    return np.ascontiguousarray(c8).view(np.uint64)


# ----------------------------------------------------------------------------- report

TEXT_NOTE = (
    "**Method.** {source}: {read} documents read, {dup} exact duplicates (identical token sequences) "
    "collapsed and {empty} empty ones dropped, leaving {n} documents, {feat} features, {nnz} nonzeros. "
    "Tokens: {tok}. Features: scikit-learn TF-IDF (smooth IDF, raw TF, l2 rows, float32). Truth: every "
    "pair with exact cosine >= tau ({t8} pairs at 0.8, {t9} at 0.9), by a blocked sparse self-product "
    "with an exact bound for the {ff} most frequent features ({ts:.1f} s). Every method sees the same "
    "tokens: simlsh signs the TF-IDF matrix (`dedup --signer hashing-trick --cosine tau`, radius r = "
    "floor(f acos(tau)/pi)); its text-pipeline row re-tokenises the same texts with its own tokenizer and IDF; "
    "datasketch `MinHashLSH` ({perm} permutations) indexes the token sets at the Jaccard threshold "
    "tau/(2 - tau) (the Jaccard of equal-size sets whose binary cosine is tau), all candidates of each "
    "query reported, then verified by estimated Jaccard >= threshold; simhash (1e0ng) gets the TF-IDF "
    "weights as (token, weight) pairs, gaoya the unweighted tokens (its API has no weights), both 64 "
    "bits at the same radius r (`SimhashIndex(k=r)` answers <= k; gaoya's index answers < "
    "hamming_distance, so it gets r + 1). Their pairs for precision/recall are the brute-force Hamming "
    "<= r pairs of their own fingerprints; their index time is the build plus a timed prefix of queries "
    "scaled to all documents (marked *; at r = {r} these pure-Python/4-bit-block indexes scan huge buckets). "
    "Time = signing + index + queries (simlsh: its `--stats` phases without `read`; peers: in-process "
    "timers, loading and conversion to the peer's input type excluded); CPU = the whole process; peak "
    "RSS = the process's VmHWM (includes the loaded data and, for Python, the interpreter and libraries). One thread each. Ideal recall = mean over "
    "truth pairs of P[Binomial(f, angle/pi) <= r], the recall of an ideal random-hyperplane signature."
)


def render(result):
    out = []
    out.append("# Real-data comparison\n")
    out.append(f"Machine: {result['machine']}; mode: {'smoke' if result['smoke'] else 'full'}; "
               f"run time {result['seconds']:.0f} s.\n")
    for name, task in result["text"].items():
        m = task["meta"]
        out.append(f"## Near-duplicates: {name}\n")
        tok = ("URLs removed, then the command line's own tokenizer (`--mode words`: lower-cased UAX #29 words "
               "with a letter or digit)" if name.startswith("tweets") else
               "whitespace collapsed, then the command line's own tokenizer (`--mode chars --ngram 2`: character "
               "bigrams; a bigram without a letter or digit dropped)")
        out.append(TEXT_NOTE.format(source=m["source"], read=m["documents_read"], dup=m["exact_duplicates_collapsed"],
                                    empty=m["empty_dropped"], n=m["documents"], feat=m["features"], nnz=m["nonzeros"],
                                    tok=tok, t8=m["truth_pairs"]["0.8"], t9=m["truth_pairs"]["0.9"],
                                    ff=m["truth_split"]["frequent_features"], ts=m["truth_seconds"], perm=NUM_PERM,
                                    r=m["radius_64"]["0.8"]) + "\n")
        for tau in TAUS:
            rows = task["rows"][str(tau)]
            out.append(f"**tau = {tau}** ({m['truth_pairs'][str(tau)]} truth pairs)\n")
            if tau == TAU:
                out.append(f"| method | features | parameters | pairs | precision | recall | F1 | recall, "
                           f"{N_SEEDS} seeds | ideal recall | time s | CPU s | peak RSS MB |")
                out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
            else:
                out.append("| method | parameters | pairs | precision | recall | F1 | ideal recall |")
                out.append("|---|---|---|---|---|---|---|")
            for r in rows:
                ideal = fmt(r.get("ideal_recall"))
                if tau == TAU:
                    t = "–" if r["time_s"] is None else (f"{r['time_s']:.2f}" + ("*" if r.get("extrapolated") else ""))
                    out.append(f"| {r['method']} | {r['features']} | {r['params']} | {r['reported']} | "
                               f"{fmt(r['precision'])} | {fmt(r['recall'])} | {fmt(r['f1'])} | {r.get('seed_recall', '–')} | "
                               f"{ideal} | {t} | "
                               f"{fmt(r['cpu_s'], 2)} | {mb(r['peak_rss_mb'])} |")
                else:
                    out.append(f"| {r['method']} | {r['params']} | {r['reported']} | {fmt(r['precision'])} | "
                               f"{fmt(r['recall'])} | {fmt(r['f1'])} | {ideal} |")
            out.append("")
    g = result["glove"]
    out.append("## Cosine estimation and k-NN on GloVe 6B 50d\n")
    out.append(
        f"**Method.** {g['source']}. Each signer signs the base and the queries with the same seed (`simlsh "
        "sign --signer S --bits f --seed 0`; checked: a file of the first 100 base rows signs to the same codes, "
        "so a signature depends on its row only). Estimated cosine = cos(pi h / f). MAE random = mean |estimated "
        f"- exact| over {g['random_pairs_per_query']} random base rows per query; MAE top-10 = the same over each "
        "query's exact top-10 neighbours (high cosines); ideal = the expected MAE of an ideal random-hyperplane "
        "signature, E|cos(pi H / f) - c| with H ~ Binomial(f, acos(c)/pi), averaged over the same pairs. "
        "recall@10 = overlap of the 10 nearest base rows by Hamming distance (ties to the smaller id) with the "
        "exact cosine top-10 (`gt_cosine_top100.ivecs`, 0-based, checked against our own float64 brute force). "
        "The numpy Gaussian reference signs with `default_rng(seed).standard_normal((50, f))` hyperplanes, "
        "independent of simlsh; its row is the mean over three seeds. "
        "Sign s = signing the base, one thread (simlsh: `--stats` sign phase). The last two columns are "
        "`simlsh eval` on the bundled 10k vectors (its own random pairs; queries = its first rows, self "
        "excluded) as a cross-check of the same figures computed by the tool. FAISS `IndexLSH` needs "
        "`rotate_data=True` here: without rotation it only thresholds the first f coordinates and refuses "
        "f > d = 50.\n")
    out.append("| signer | f | MAE random | ideal | MAE top-10 | ideal | bias random | recall@10 | sign s | "
               "simlsh eval MAE | simlsh eval recall@10 |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in g["rows"]:
        out.append(f"| {r['signer']} | {r['bits']} | {r['mae_random']:.4f} | {r['ideal_mae_random']:.4f} | "
                   f"{r['mae_top10']:.4f} | {r['ideal_mae_top10']:.4f} | {r['bias_random']:+.4f} | "
                   f"{r['recall_at_10']:.3f} | {r['sign_s']:.4f} | {fmt(r['simlsh_eval_mae'], 4)} | "
                   f"{fmt(r['simlsh_eval_recall'])} |")
    out.append("")
    out.append("## Checks\n")
    for c in result["checks"]:
        out.append(f"- {'ok' if c['ok'] else '**FAIL**'}: {c['check']} ({c['detail']})")
    out.append("")
    return "\n".join(out)


def _machine():
    return f"{machine()}, Python {platform.python_version()}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--simlsh", help="path of the simlsh binary")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--smoke", action="store_true", help="tiny prefixes, same code paths")
    ap.add_argument("--shared", default=None, help="shared data folder (default: ../shared next to the repo)")
    ap.add_argument("--keep-work", action="store_true", help="keep OUT/work (intermediate files)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    ap.add_argument("--params", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.dir, json.loads(args.params))
        return 0
    if not args.simlsh or not args.out:
        ap.error("--simlsh and --out are required")
    args.simlsh = str(Path(args.simlsh).resolve())
    shared = Path(args.shared).resolve() if args.shared else (ROOT.parent / "shared")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    checks = Checks()
    sd = shared / "datasets"
    specs = {}
    tw_full, zh_full = sd / "healthtweets" / "healthtweets.csv.gz", sd / "chinese-poetry-tang-song" / "poet.tang.jsonl.gz"
    tw_small = ROOT / "datasets" / "healthtweets-10k" / "healthtweets-10k.csv"
    zh_small = ROOT / "datasets" / "chinese-poetry-3k" / "poems.jsonl"
    if args.smoke:
        specs["tweets"] = {"path": tw_small, "lang": "en", "limit": 2000,
                           "label": "first 2,000 rows of the bundled `datasets/healthtweets-10k`"}
        specs["poems"] = {"path": zh_small, "lang": "zh", "limit": 2000,
                          "label": "first 2,000 rows of the bundled `datasets/chinese-poetry-3k`"}
    else:
        specs["tweets"] = ({"path": tw_full, "lang": "en",
                            "label": "all 63,326 tweets of `../shared/datasets/healthtweets`"} if tw_full.exists() else
                           {"path": tw_small, "lang": "en", "label": "bundled `datasets/healthtweets-10k` (10,000 tweets)"})
        specs["poems"] = ({"path": zh_full, "lang": "zh",
                           "label": "all 57,607 Tang poems of `../shared/datasets/chinese-poetry-tang-song`"}
                          if zh_full.exists() else
                          {"path": zh_small, "lang": "zh", "label": "bundled `datasets/chinese-poetry-3k` (3,500 poems)"})
    result = {"smoke": args.smoke, "machine": _machine(), "simlsh": args.simlsh, "text": {}, "glove": None}
    for name, spec in specs.items():
        print(f"== {name}", file=sys.stderr)
        result["text"][name] = text_task(name, spec, args, checks)
    print("== glove", file=sys.stderr)
    result["glove"] = glove_task(args, shared, checks)
    result["checks"] = checks.items
    result["seconds"] = time.perf_counter() - t0
    md = render(result)
    (out / "realdata.json").write_text(json.dumps(result, indent=1, default=str))
    (out / "realdata.md").write_text(md)
    if not args.keep_work:
        shutil.rmtree(out / "work", ignore_errors=True)
    print(md)
    if checks.failed:
        print(f"{len(checks.failed)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
