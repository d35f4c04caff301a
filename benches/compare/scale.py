#!/usr/bin/env python3
"""The large runs of the comparison: each writes OUT/<task>.json and prints a markdown table.

  python benches/compare/scale.py poems  --simlsh BIN --out OUT [--shared ../shared] [--repeat 3]
  python benches/compare/scale.py corpus --simlsh BIN --gen BIN --out OUT --docs N [--threads T] [--peers minhash,rensa]
  python benches/compare/scale.py knn    --simlsh BIN --out OUT --vectors F.fvecs --label NAME [--rerank M]

poems: every Song and Tang poem of `../shared/datasets/chinese-poetry-tang-song` (whitespace
  collapsed, identical texts collapsed: `textprep.collapse`) deduplicated at cosine >= 0.8 by
  `RAYON_NUM_THREADS=1 simlsh dedup docs.txt --mode chars --ngram 2 --cosine 0.8` (verified:
  exact TF-IDF cosine), timed end to end (process wall clock, the median of --repeat runs),
  scored against the exact truth (`textprep.truth_pairs` on the same tokens and weights).
corpus: the generated corpus of `compare_corpus` (examples; `gen_corpus.rs`) with N documents
  and planted near-duplicate clusters, deduplicated at cosine >= 0.8 under `/usr/bin/time -v`
  (elapsed, peak RSS), scored against the planted pairs whose exact cosine is >= 0.8.
  --peers runs MinHash LSH on the same documents (each line's words as a token set, the
  Jaccard 0.667 matched to cosine 0.8 as in realdata.py): datasketch (`minhash`) and rensa,
  each in its own one-thread process (realdata.py's workers), scored against the same truth.
knn: the k-NN graph (k = 10) of a set of unit vectors by `simlsh knn --rerank M` against the
  exact cosine top 10 (a blocked NumPy float scan, timed in the same run, same thread count).
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import textprep as tp  # noqa: E402
from realdata import NUM_PERM, dedup_plan, jaccard_for, keys_of, read_pairs_tsv, run_child, score  # noqa: E402
from timing import run_timed  # noqa: E402

TAU = 0.8


def poems(a):
    out = Path(a.out)
    wdir = out / "poems312k"
    wdir.mkdir(parents=True, exist_ok=True)
    d = Path(a.shared) / "datasets" / "chinese-poetry-tang-song"
    t0 = time.perf_counter()
    texts = []
    for f in ("poet.tang.jsonl.gz", "poet.song.jsonl.gz"):
        texts += tp.load_texts(d / f, limit=a.limit)
    tok = tp.library_tokenize("zh")
    toks, lines, _, n_dup, n_empty = tp.collapse(texts, tok, tp.normalise_zh)
    x, _ = tp.tfidf(toks)
    del toks
    docs = wdir / "docs.txt"  # the truth's keys: keys_of(i, j, n) over these lines (0-based)
    docs.write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    t1 = time.perf_counter()
    ti, tj, tc, info = tp.truth_pairs(x, TAU)
    t2 = time.perf_counter()
    n = x.shape[0]
    truth = ti * n + tj
    np.save(wdir / "truth.npy", np.stack([ti, tj]).astype(np.int64))
    np.save(wdir / "truth.cos.npy", tc)
    print(f"poems: {len(texts)} read, {n} kept, {len(truth)} truth pairs; prep {t1 - t0:.0f} s, "
          f"truth {t2 - t1:.0f} s", file=sys.stderr)
    # --bits 256: at the default 64 bits the planner's 4-bit bands put ~20,000 rows in a group,
    # over the cap, and nothing is compared (see results.md).
    cmd = [a.simlsh, "dedup", docs, *tp.CLI_TEXT["zh"], "--bits", a.bits or 256, "--cosine", TAU, "--pairs", wdir / "pairs.tsv",
           "--stats", wdir / "stats.json"]
    runs = []
    for r in range(a.repeat):
        runs.append(run_timed(cmd, wdir / f"dedup-{r}", {"RAYON_NUM_THREADS": "1"}))
    i, j, _ = read_pairs_tsv(wdir / "pairs.tsv")
    sc = score(keys_of(i, j, n), truth)
    st = json.loads((wdir / "stats.json").read_text())
    res = {
        "task": "poems", "documents_read": len(texts), "documents": n, "exact_duplicates_collapsed": n_dup,
        "empty_dropped": n_empty, "nonzeros": int(x.nnz), "truth_pairs": int(len(truth)),
        "truth_seconds": t2 - t1, "truth_split": info,
        "command": "RAYON_NUM_THREADS=1 " + " ".join(map(str, cmd)),
        "wall_s": [r["wall_s"] for r in runs], "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "cpu_s": [r["cpu_s"] for r in runs], "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "plan": dedup_plan(runs[-1]["stderr"]), "phases_seconds": st.get("phases_seconds"), **sc,
        "load": os.getloadavg(),
    }
    (out / "poems.json").write_text(json.dumps(res, indent=1))
    print(f"| Song + Tang poems, {n:,} documents | {len(truth):,} | {res['median_wall_s']:.2f} s "
          f"({', '.join(f'{w:.2f}' for w in res['wall_s'])}) | {res['peak_rss_mb']:.0f} MB | "
          f"{sc['recall']:.4f} | {sc['precision']:.4f} | {res['plan']} |")


def corpus(a):
    out = Path(a.out)
    wdir = out / f"corpus-{a.docs}"
    if not (wdir / "corpus.json").exists():
        g = run_timed([a.gen, wdir, "--docs", a.docs, "--seed", a.seed], out / f"gen-{a.docs}")
        (wdir / "gen.json").write_text(json.dumps({k: v for k, v in g.items() if k != "stderr"}))
    meta = json.loads((wdir / "corpus.json").read_text())
    gen = json.loads((wdir / "gen.json").read_text()) if (wdir / "gen.json").exists() else {}
    # Without --bits the command line signs at the width the join planner finds cheapest for the
    # number of documents (4,096 bits at 10M).
    bits = ["--bits", a.bits] if a.bits else []
    cmd = [a.simlsh, "dedup", wdir / "corpus.txt", "--mode", "words", *bits, "--cosine", TAU, "--pairs",
           wdir / "pairs.tsv", "--stats", wdir / "stats.json", *(["--threads", a.threads] if a.threads else [])]
    r = run_timed(cmd, wdir / "dedup")
    n = meta["docs"]
    pl = np.fromfile(wdir / "planted.u32", dtype="<u4").reshape(-1, 2).astype(np.int64)
    pc = np.fromfile(wdir / "planted.cos.f64", dtype="<f8")
    m = pc >= TAU
    truth = np.unique(pl[m, 0] * n + pl[m, 1])
    i, j, _ = read_pairs_tsv(wdir / "pairs.tsv")
    found = keys_of(i, j, n)
    sc = score(found, truth)
    extra = int(len(np.setdiff1d(found, truth)))
    st = json.loads((wdir / "stats.json").read_text())
    res = {
        "task": "corpus", "docs": n, "generator": meta, "generator_run": gen, "planted_pairs": int(len(pl)),
        "truth_pairs": int(len(truth)), "found_pairs": int(len(found)), "found_not_planted": extra,
        "command": " ".join(map(str, cmd)), "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
        "peak_rss_mb": r["peak_rss_mb"], "plan": dedup_plan(r["stderr"]),
        "phases_seconds": st.get("phases_seconds"), **sc, "load": os.getloadavg(),
    }
    if a.peers:
        res["peers"] = corpus_peers(a.peers.split(","), wdir, n, truth)
    (out / f"corpus-{n}.json").write_text(json.dumps(res, indent=1))
    for pr in res.get("peers", []):
        print(f"| {pr['label']} | {pr['params']} | CPU {pr['cpu_s']:.1f} s (sign {pr['times']['sign']:.1f}, "
              f"index {pr['times']['index']:.1f}, query {pr['times']['query']:.1f}, verify {pr['times']['verify']:.1f}) "
              f"| {pr['peak_rss_mb']:.0f} MB | candidates: recall {pr['candidates']['recall']:.4f}, "
              f"F1 {pr['candidates']['f1']:.4f} | verified: recall {pr['verified']['recall']:.4f}, "
              f"precision {pr['verified']['precision']:.4f}, F1 {pr['verified']['f1']:.4f} |")
    print(f"| {n:,} documents ({meta['bytes'] / 2**20:.0f} MiB) | {len(truth):,} | {r['wall_s']:.1f} s "
          f"(CPU {r['cpu_s']:.1f} s) | {r['peak_rss_mb']:.0f} MB | {sc['recall']:.4f} | {sc['precision']:.4f} "
          f"({extra} found pairs not planted) | {res['plan']} |")


PEERS = {"minhash": "datasketch MinHashLSH", "rensa": "rensa RMinHashLSH"}


def corpus_peers(kinds, wdir, n, truth):
    """MinHash LSH of the peers on the corpus's documents (token sets of each line's words, the
    Jaccard matched to TAU), each in its own process; candidates and candidates verified by
    the estimated Jaccard, scored against the planted truth."""
    import pickle

    toks = wdir / "tokens.pkl"
    if not toks.exists():
        with open(wdir / "corpus.txt", encoding="utf-8") as fh:
            docs = [line.split() for line in fh]
        if len(docs) != n:
            raise SystemExit(f"{wdir / 'corpus.txt'}: {len(docs)} lines, the corpus has {n} documents")
        with open(toks, "wb") as fh:
            pickle.dump(docs, fh, protocol=pickle.HIGHEST_PROTOCOL)
        del docs
    rows = []
    for kind in kinds:
        if kind not in PEERS:
            raise SystemExit(f"--peers: unknown peer {kind!r} (known: {', '.join(PEERS)})")
        res_path, pairs = wdir / f"{kind}.json", wdir / f"{kind}-{TAU}.npy"
        proc = run_child([sys.executable, HERE / "realdata.py", "--worker", kind, "--dir", wdir, "--params",
                          json.dumps({"jaccard": [jaccard_for(TAU)], "result": str(res_path),
                                      "pairs": [str(pairs)]})], wdir / kind)
        run = json.loads(res_path.read_text())["runs"][0]
        qi, qj, ok = np.load(pairs)
        rows.append({
            "peer": kind, "label": PEERS[kind], "cpu_s": proc["cpu_s"], "wall_s": proc["wall_s"],
            "peak_rss_mb": run["peak_rss_mb"], "times": run["times"],
            "params": f"J = {run['jaccard']:.3f}, {NUM_PERM} perm, b = {run['bands']}, r = {run['rows_per_band']}",
            "candidates": score(keys_of(qi, qj, n), truth),
            "verified": score(keys_of(qi[ok == 1], qj[ok == 1], n), truth),
        })
    return rows


def read_fvecs(path):
    raw = np.fromfile(path, dtype=np.float32)
    d = raw[:1].view(np.int32)[0]
    return raw.reshape(-1, d + 1)[:, 1:].copy()


def exact_knn(x, k, block=2048):
    """Top k by cosine of every row of unit-normalised x among the others (self excluded)."""
    n = len(x)
    idx = np.empty((n, k), dtype=np.int64)
    for b0 in range(0, n, block):
        b1 = min(n, b0 + block)
        s = x[b0:b1] @ x.T
        s[np.arange(b1 - b0), np.arange(b0, b1)] = -np.inf
        part = np.argpartition(-s, k, axis=1)[:, :k]
        ps = np.take_along_axis(s, part, axis=1)
        order = np.argsort(-ps, axis=1, kind="stable")
        idx[b0:b1] = np.take_along_axis(part, order, axis=1)
    return idx


def knn(a):
    out = Path(a.out)
    wdir = out / f"knn-{a.label}"
    wdir.mkdir(parents=True, exist_ok=True)
    x = read_fvecs(a.vectors)
    if a.limit:
        x = x[: a.limit]
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-30)
    n, d = x.shape
    vec = wdir / "vectors.fvecs"
    rows = np.empty((n, d + 1), dtype=np.float32)
    rows[:, 0] = np.array([d], dtype=np.int32).view(np.float32)[0]
    rows[:, 1:] = x
    rows.tofile(vec)
    k = 10
    # Wall and CPU time (the machine may be shared: CPU time is the work done; one thread).
    t_exact, c_exact = [], []
    for _ in range(a.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        ex = exact_knn(x, k)
        t_exact.append(time.perf_counter() - t0)
        c_exact.append(time.process_time() - c0)
    faiss_t, faiss_c = [], []
    try:
        import faiss

        faiss.omp_set_num_threads(a.threads)
        for _ in range(a.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            ix = faiss.IndexFlatIP(d)
            ix.add(x)
            _, fi = ix.search(x, k + 1)
            faiss_t.append(time.perf_counter() - t0)
            faiss_c.append(time.process_time() - c0)
    except ImportError:
        fi = None
    rows_out = []
    for bits, rerank in [(a.bits or 256, int(m)) for m in str(a.rerank).split(",")]:
        cmd = [a.simlsh, "knn", vec, "--k", k, "--rerank", rerank, "--signer", a.signer, "--bits", bits,
               "--threads", a.threads, "--out", wdir / f"knn-{bits}-{rerank}.tsv", "--seed", 0, "--quiet"]
        runs = [run_timed(cmd, wdir / f"knn-{bits}-{rerank}-{r}") for r in range(a.repeat)]
        times, cpus = [r["wall_s"] for r in runs], [r["cpu_s"] for r in runs]
        g = np.loadtxt(wdir / f"knn-{bits}-{rerank}.tsv", skiprows=1, usecols=(0, 1), dtype=np.int64, ndmin=2)
        got = [set() for _ in range(n)]
        for p, q in g:
            got[p].add(q)
        rec = float(np.mean([len(got[p] & set(ex[p])) / k for p in range(n)]))
        rows_out.append({"bits": bits, "rerank": rerank, "signer": a.signer, "command": " ".join(map(str, cmd)),
                         "wall_s": times, "median_wall_s": statistics.median(times), "cpu_s": cpus,
                         "median_cpu_s": statistics.median(cpus), "recall_at_10": rec})
    res = {"task": "knn", "label": a.label, "n": n, "d": d, "threads": a.threads, "exact_numpy_s": t_exact,
           "median_exact_numpy_s": statistics.median(t_exact), "faiss_flat_ip_s": faiss_t,
           "median_faiss_flat_ip_s": statistics.median(faiss_t) if faiss_t else None,
           "exact_numpy_cpu_s": c_exact, "median_exact_numpy_cpu_s": statistics.median(c_exact),
           "faiss_flat_ip_cpu_s": faiss_c, "median_faiss_flat_ip_cpu_s": statistics.median(faiss_c) if faiss_c else None,
           "simlsh": rows_out,
           "load": os.getloadavg()}
    (out / f"knn-{a.label}.json").write_text(json.dumps(res, indent=1))
    for r in rows_out:
        ref = min(res["median_exact_numpy_cpu_s"], res["median_faiss_flat_ip_cpu_s"] or float("inf"))
        print(f"| {a.label} ({n:,} × {d}) | {r['signer']} {r['bits']} bit, --rerank {r['rerank']} | "
              f"{r['recall_at_10']:.4f} | {r['median_cpu_s']:.2f} s ({r['median_wall_s']:.2f} s) | "
              f"NumPy {res['median_exact_numpy_cpu_s']:.2f} s ({res['median_exact_numpy_s']:.2f} s), FAISS IndexFlatIP "
              f"{res['median_faiss_flat_ip_cpu_s'] or float('nan'):.2f} s ({res['median_faiss_flat_ip_s'] or float('nan'):.2f} s) "
              f"| {ref / r['median_cpu_s']:.2f}× |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=("poems", "corpus", "knn"))
    ap.add_argument("--simlsh", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--shared", default=str(HERE.parent.parent.parent / "shared"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--gen")
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--peers", default=None, help="corpus: MinHash LSH peers beside simlsh (minhash,rensa)")
    ap.add_argument("--vectors")
    ap.add_argument("--label")
    ap.add_argument("--signer", default="super-bit")
    ap.add_argument("--bits", type=int, default=None,
                    help="signature width (default 256 for poems and knn; corpus: the planned width)")
    ap.add_argument("--rerank", default="100", help="M, or a comma-separated list of M")
    a = ap.parse_args()
    if a.task == "knn" and a.threads is None:
        a.threads = 1
    {"poems": poems, "corpus": corpus, "knn": knn}[a.task](a)


if __name__ == "__main__":
    main()
