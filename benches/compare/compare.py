"""Runs simlsh and its peers on the fixed workloads W1-W5 in one run, checks every answer,
and writes one table (markdown), the raw results (JSON lines) and two SVG plots.

usage: python compare.py --data DIR --out DIR --worker PATH [--gaoya PATH] [--smoke] [--only W1,W3]

Every job is its own process (benches/compare/worker.rs for simlsh, peers.py for the Python
peers, benches/compare/gaoya/main.rs for the gaoya crate), so its peak memory (the process's own
VmHWM, read by the job at its end) is its own. Thread counts: each job runs with T = 1 and, where the
system has a parallel path, T = all cores; the environment's OMP/OpenBLAS/MKL/Rayon thread
variables are set to T.
"""
import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "peers.py")
CORES = os.cpu_count() or 1
# The simlsh system each peer is compared with, per workload.
REFERENCE = {"W1": "hashing-trick", "W2": "gaussian", "W3": "manku", "W4": "join", "W5": "linear"}
# Every answer of W3-W5 must be exact; the signatures of these simlsh signers must have an
# angle RMSE within this factor of the ideal binomial RMSE (W1, W2). Very sparse projections
# are reported but not gated: on W1's sparse rows most of their projections are exactly 0.
QUALITY_SLACK = 1.25
QUALITY_GATED = {"hashing-trick", "gaussian", "super-bit"}
UNIT = {"W1": "rows/s", "W2": "rows/s", "W3": "queries/s", "W4": "codes/s", "W5": "queries/s"}
TITLE = {
    "W1": "W1 sparse signing: 100,000 rows, D = 2^20, 197 nonzeros per row",
    "W2": "W2 dense signing: 100,000 x 384 float32",
    "W3": "W3 radius <= 3: 10,000 queries over 1,000,000 64-bit codes",
    "W4": "W4 self-join at radius <= 3: 1,000,000 64-bit codes (time includes the index build)",
    "W5": "W5 10-NN: 1,000 queries over 1,000,000 256-bit codes",
}


# ------------------------------------------------------------------ the plan
def job(kind, workload, system, f=None, threads=1, reps=3, sub=None, sweep=False):
    return {"kind": kind, "workload": workload, "system": system, "f": f, "threads": threads, "reps": reps,
            "sub": sub, "sweep": sweep}


def plan(smoke, gaoya):
    """The job list. Smoke runs every code path on small prefixes with one repetition."""
    s = (lambda full, small: small if smoke else full)
    reps = s(3, 1)
    ts = sorted({1, CORES})
    p = []
    for f in (64, 256):
        for t in ts:
            p.append(job("simlsh", "W1", "hashing-trick", f, t, reps, s(None, 2000)))
        p.append(job("simlsh", "W1", "very-sparse", f, 1, reps, s(None, 2000)))
        p.append(job("peer", "W1", "sklearn-srp", f, 1, reps, s(None, 2000)))
        p.append(job("peer", "W1", "scipy-csr-dense", f, 1, 1, s(None, 2000)))
        p.append(job("peer", "W1", "simhash-1e0ng", f, 1, 1, s(500 if f == 64 else 300, 50)))
    for t in ts:
        p.append(job("peer", "W1", "gaoya-py", 64, t, reps, s(None, 2000)))
    for f in (64, 256):
        for t in ts:
            p.append(job("simlsh", "W2", "gaussian", f, t, reps, s(None, 2000)))
            p.append(job("peer", "W2", "numpy", f, t, reps, s(None, 2000)))
            p.append(job("peer", "W2", "faiss-lsh", f, t, reps, s(None, 2000)))
            p.append(job("peer", "W2", "simlsh-py", f, t, reps, s(None, 2000)))
        p.append(job("simlsh", "W2", "super-bit", f, 1, reps, s(None, 2000)))
        p.append(job("peer", "W2", "sklearn-grp", f, 1, reps, s(None, 2000)))
    for f in (128, 512, 1024):  # throughput against f (single thread), for the plot
        for kind, system in (("simlsh", "gaussian"), ("peer", "numpy"), ("peer", "faiss-lsh")):
            p.append(job(kind, "W2", system, f, 1, reps, s(None, 2000), sweep=True))
    for t in ts:
        p.append(job("simlsh", "W3", "manku", None, t, reps, s(None, 500)))
        p.append(job("simlsh", "W3", "mih", None, t, reps, s(None, 500)))
        p.append(job("peer", "W3", "faiss-multihash", None, t, reps, s(None, 500)))
        p.append(job("peer", "W3", "simlsh-py", None, t, reps, s(None, 500)))
        p.append(job("peer", "W3", "faiss-flat", None, t, 1, s(1000, 20)))
        if gaoya:
            p.append(job("gaoya", "W3", "gaoya-rs", None, t, reps, s(None, 500)))
    p.append(job("simlsh", "W3", "linear", None, 1, 1, s(1000, 20)))
    p.append(job("peer", "W3", "faiss-hash", None, 1, 1, s(1000, 20)))
    p.append(job("peer", "W3", "numpy-brute", None, 1, 1, s(100, 5)))
    p.append(job("peer", "W3", "simhash-1e0ng", None, 1, 1, s(1000, 20)))
    for t in ts:
        p.append(job("simlsh", "W4", "join", None, t, reps))
        p.append(job("peer", "W4", "faiss-multihash", None, t, 1, s(None, 20000)))
        p.append(job("peer", "W4", "simlsh-py", None, t, 1))
        p.append(job("peer", "W4", "faiss-flat", None, t, 1, s(2000, 50)))
        if t == 1:  # W4's clusters hold pairs at distance 4-6: they catch a radius off by one
            p.append(job("peer", "W4", "faiss-hash", None, t, 1, s(2000, 50)))
        if gaoya:
            p.append(job("gaoya", "W4", "gaoya-rs", None, t, 1, s(None, 20000)))
    p.append(job("peer", "W4", "simhash-1e0ng", None, 1, 1, s(5000, 200)))
    for t in ts:
        p.append(job("simlsh", "W5", "linear", None, t, reps, s(None, 20)))
        p.append(job("simlsh", "W5", "mih", None, t, reps, s(None, 20)))
        p.append(job("peer", "W5", "faiss-flat", None, t, reps, s(None, 20)))
        p.append(job("peer", "W5", "simlsh-py", None, t, reps, s(None, 20)))
    p.append(job("peer", "W5", "numpy-brute", None, 1, 1, s(20, 3)))
    return p


def command(j, args, out):
    common = ["--data", args.data, "--out", out, "--threads", str(j["threads"]), "--reps", str(j["reps"])]
    if j["sub"]:
        common += ["--sub", str(j["sub"])]
    w = j["workload"].lower()
    if j["kind"] == "simlsh":
        return [args.worker, w, j["system"]] + common + (["--f", str(j["f"])] if j["f"] else [])
    if j["kind"] == "gaoya":
        return [args.gaoya, w] + common
    return [sys.executable, PEERS, w, j["system"]] + common + (["--f", str(j["f"])] if j["f"] else [])


def run(j, args, out, timeout):
    """Runs one job; returns its JSON record with the child's own peak RSS."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS",
              "NUMEXPR_NUM_THREADS"):
        env[k] = str(j["threads"])
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    with open(os.path.join(out, "stdout"), "w") as so, open(os.path.join(out, "stderr"), "w") as se:
        proc = subprocess.Popen(command(j, args, out), env=env, stdout=so, stderr=se)
        deadline = t0 + timeout
        while True:
            pid, status = os.waitpid(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.time() > deadline:
                proc.kill()
                pid, status = os.waitpid(proc.pid, 0)
                break
            time.sleep(0.05)
    rec = dict(j)
    rec["job_wall_s"] = round(time.time() - t0, 2)
    code = os.waitstatus_to_exitcode(status)
    lines = [l for l in open(os.path.join(out, "stdout")).read().splitlines() if l.startswith("{")]
    if code != 0 or not lines:
        rec["error"] = "exit %s: %s" % (code, open(os.path.join(out, "stderr")).read()[-800:])
        return rec
    rec.update(json.loads(lines[-1]))
    rec["peak_rss_kb"] = rec["rss_hwm_end_kb"]
    full = rec["n_full"] / rec["n"]  # extrapolation of a prefix run to the whole workload
    rec["extrapolated"] = rec["n"] < rec["n_full"]
    rec["seconds_full"] = rec["seconds"] * full
    if j["workload"] == "W4":  # a self-join builds its own index
        rec["seconds_full"] += rec.get("build_s") or 0.0
    rec["throughput"] = rec["n_full"] / rec["seconds_full"]
    return rec


# ------------------------------------------------------------------ the checks
def load(data, name, dtype):
    return np.fromfile(os.path.join(data, name), dtype=dtype)


def pair_cosines(args, workload, m):
    """Exact cosines of the pairs (2k, 2k+1), k < m."""
    if workload == "W1":
        indptr = load(args.data, "w1.indptr.i64", np.int64)[: 2 * m + 1]
        idx = load(args.data, "w1.indices.u32", np.uint32)[: indptr[-1]]
        val = load(args.data, "w1.data.f32", np.float32)[: indptr[-1]].astype(np.float64)
        out = np.empty(m)
        for k in range(m):
            a, b = slice(indptr[2 * k], indptr[2 * k + 1]), slice(indptr[2 * k + 1], indptr[2 * k + 2])
            _, xa, xb = np.intersect1d(idx[a], idx[b], assume_unique=True, return_indices=True)
            va, vb = val[a], val[b]
            out[k] = np.dot(va[xa], vb[xb]) / math.sqrt(np.dot(va, va) * np.dot(vb, vb))
        return out
    x = load(args.data, "w2.x.f32", np.float32).reshape(-1, 384)[: 2 * m].astype(np.float64)
    a, b = x[0::2], x[1::2]
    return np.sum(a * b, 1) / np.sqrt(np.sum(a * a, 1) * np.sum(b * b, 1))


def check_signatures(rec, args, out, cache):
    f = rec["f"]
    codes = np.fromfile(os.path.join(out, "codes.u8"), dtype=np.uint8)
    codes = codes.reshape(-1, f // 8)
    m = len(codes) // 2
    key = (rec["workload"], m)
    if key not in cache:
        cache[key] = pair_cosines(args, rec["workload"], m)
    p = np.arccos(np.clip(cache[key], -1, 1)) / math.pi
    h = np.bitwise_count(codes[0:2 * m:2] ^ codes[1:2 * m:2]).sum(1) / f
    rmse = float(np.sqrt(np.mean((h - p) ** 2)))
    ideal = float(np.sqrt(np.mean(p * (1 - p) / f)))
    rec["check"] = {"rmse": rmse, "ideal_rmse": ideal, "pairs": m}
    ok = rmse <= QUALITY_SLACK * ideal
    rec["check_text"] = "RMSE %.2fx ideal" % (rmse / ideal)
    gated = (rec["kind"] == "simlsh" and rec["system"] in QUALITY_GATED) or rec["system"] == "simlsh-py"
    return ok or not gated


def check_w3(rec, args, out):
    ti = load(args.data, "w3.truth_indptr.i64", np.int64)
    tid = load(args.data, "w3.truth_ids.u32", np.uint32)
    lims = np.fromfile(os.path.join(out, "lims.i64"), dtype=np.int64)
    ids = np.fromfile(os.path.join(out, "ids.i64"), dtype=np.int64)
    n = len(lims) - 1
    if n != rec["n"]:
        rec["check_text"] = "WRONG: %d answers for %d queries" % (n, rec["n"])
        return False
    wrong = 0
    found = planted = 0
    for j in range(n):
        got = set(ids[lims[j]:lims[j + 1]].tolist())
        want = set(tid[ti[j]:ti[j + 1]].tolist())
        wrong += got != want
        found += len(got & want)
        planted += len(want)
    rec["check"] = {"queries": n, "wrong_queries": wrong, "recall": found / max(planted, 1)}
    rec["check_text"] = "exact" if wrong == 0 else "WRONG on %d of %d queries" % (wrong, n)
    return wrong == 0


def check_w4(rec, args, out):
    truth = load(args.data, "w4.truth_pairs.u32", np.uint32).astype(np.int64).reshape(-1, 2)
    pairs = np.fromfile(os.path.join(out, "pairs.i64"), dtype=np.int64).reshape(-1, 2)
    pairs = np.unique(np.sort(pairs, axis=1), axis=0)
    want = truth[truth[:, 0] < rec["n"]]
    ok = len(pairs) == len(want) and bool(np.array_equal(pairs, want))
    rec["check"] = {"pairs": int(len(pairs)), "truth_pairs": int(len(want))}
    rec["check_text"] = ("exact, %d pairs" % len(pairs)) if ok else "WRONG: %d pairs, %d expected" % (len(pairs), len(want))
    return ok


def check_w5(rec, args, out):
    truth = load(args.data, "w5.truth_ids.u32", np.uint32).reshape(-1, 10)
    ids = np.fromfile(os.path.join(out, "ids.i64"), dtype=np.int64).reshape(-1, 10)
    if len(ids) != rec["n"]:
        rec["check_text"] = "WRONG: %d answers for %d queries" % (len(ids), rec["n"])
        return False
    hit = sum(len(set(ids[j].tolist()) & set(truth[j].tolist())) for j in range(len(ids)))
    recall = hit / ids.size
    rec["check"] = {"recall_at_10": recall}
    rec["check_text"] = "exact" if recall == 1.0 else "WRONG: recall@10 %.4f" % recall
    return recall == 1.0


def check(rec, args, out, cache):
    w = rec["workload"]
    if w in ("W1", "W2"):
        return check_signatures(rec, args, out, cache)
    return {"W3": check_w3, "W4": check_w4, "W5": check_w5}[w](rec, args, out)


# ------------------------------------------------------------------ the report
def fmt_time(s):
    return "%.3g" % s if s < 100 else "%.0f" % s


def fmt_rate(x):
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return "%.3g%s" % (x / div, suf)
    return "%.3g" % x


def reference(recs, r):
    for q in recs:
        if (q["kind"] == "simlsh" and q["workload"] == r["workload"] and q["system"] == REFERENCE[r["workload"]]
                and q.get("f") == r.get("f") and q["threads"] == r["threads"] and "error" not in q):
            return q
    return None


def table(recs):
    """One table of every run, workload by workload, after a legend of the workloads."""
    present = [w for w in ("W1", "W2", "W3", "W4", "W5") if any(r["workload"] == w for r in recs)]
    lines = [""] + ["- **%s**: %s (reference row: simlsh %s)" % (w, TITLE[w].split(": ", 1)[1], REFERENCE[w])
                    for w in present]
    lines += ["", "| workload | system | f | T | time (s) | throughput | build (s) | peak RSS (MB) | check "
              "| speed simlsh / peer | memory simlsh / peer |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for w in present:
        rows = [r for r in recs if r["workload"] == w and not r["sweep"]]
        for r in sorted(rows, key=lambda r: (r.get("f") or 0, r["threads"], r["kind"] != "simlsh", r["system"])):
            name = ("**simlsh %s**" % r["system"]) if r["kind"] == "simlsh" else r["system"]
            f = r.get("f") or (256 if w == "W5" else 64)
            if "error" in r:
                lines.append("| %s | %s | %s | %d | failed: %s | | | | | | |" % (
                    w, name, f, r["threads"], r["error"].splitlines()[-1][:80] if r["error"].strip() else ""))
                continue
            ref = reference(recs, r)
            speed = mem = ""
            if ref is not None and r["kind"] != "simlsh":
                speed = "%.2f" % (r["seconds_full"] / ref["seconds_full"])
                mem = "%.2f" % (ref["peak_rss_kb"] / r["peak_rss_kb"])
            lines.append("| %s | %s | %s | %d | %s%s | %s %s | %s | %.0f | %s | %s | %s |" % (
                w, name, f, r["threads"], fmt_time(r["seconds_full"]), "*" if r["extrapolated"] else "",
                fmt_rate(r["throughput"]), UNIT[w], "%.2f" % r["build_s"] if r.get("build_s") is not None else "",
                r["peak_rss_kb"] / 1024, r.get("check_text", ""), speed, mem))
    return "\n".join(lines)


def svg_lines(series, title, xlabel, ylabel, path):
    """A log-log line plot: series = {name: [(x, y), ...]}."""
    W, H, L, R, T, B = 640, 400, 70, 150, 40, 50
    xs = [x for s in series.values() for x, _ in s]
    ys = [y for s in series.values() for _, y in s]
    if not xs:
        return
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs))
    ly0, ly1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    lx1 = lx1 if lx1 > lx0 else lx0 + 1
    ly1 = ly1 if ly1 > ly0 else ly0 + 1
    px = lambda x: L + (math.log10(x) - lx0) / (lx1 - lx0) * (W - L - R)  # noqa: E731
    py = lambda y: H - B - (math.log10(y) - ly0) / (ly1 - ly0) * (H - T - B)  # noqa: E731
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="20" font-size="14">%s</text>' % (L, title)]
    for e in range(int(ly0), int(ly1) + 1):
        y = py(10 ** e)
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, y, W - R, y))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (L - 5, y + 4, fmt_rate(10 ** e)))
    for x in sorted(set(xs)):
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (px(x), H - B + 18, x))
    o.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((L + W - R) // 2, H - 10, xlabel))
    o.append('<text x="15" y="%d" transform="rotate(-90 15 %d)" text-anchor="middle">%s</text>' % (H // 2, H // 2, ylabel))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>' % (L, T, W - L - R, H - T - B))
    for i, (name, pts) in enumerate(series.items()):
        c = colors[i % len(colors)]
        pts = sorted(pts)
        o.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (
            c, " ".join("%.1f,%.1f" % (px(x), py(y)) for x, y in pts)))
        for x, y in pts:
            o.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(x), py(y), c))
        o.append('<text x="%d" y="%d" fill="%s">%s</text>' % (W - R + 10, T + 15 + 18 * i, c, name))
    o.append("</svg>")
    with open(path, "w") as fh:
        fh.write("\n".join(o) + "\n")


def svg_bars(bars, title, path):
    """Horizontal bars on a log scale: bars = [(label, ratio), ...]; 1 = as fast as the peer."""
    W, L, R, T, rowh = 720, 300, 60, 40, 20
    H = T + rowh * len(bars) + 40
    lo = min(0.5, min(v for _, v in bars))
    hi = max(2.0, max(v for _, v in bars))
    l0, l1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    px = lambda v: L + (math.log10(v) - l0) / (l1 - l0) * (W - L - R)  # noqa: E731
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="10" y="20" font-size="14">%s</text>' % title]
    for e in range(l0, l1 + 1):
        x = px(10 ** e)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x, T, x, H - 30))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%gx</text>' % (x, H - 15, 10 ** e))
    for i, (label, v) in enumerate(bars):
        y = T + i * rowh
        x0, x1 = px(1.0), px(v)
        color = "#2ca02c" if v >= 1 else "#d62728"
        o.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>' % (min(x0, x1), y + 3, abs(x1 - x0), rowh - 6, color))
        o.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (L - 5, y + rowh - 6, label))
        o.append('<text x="%.1f" y="%d">%sx</text>' % (max(x0, x1) + 4, y + rowh - 6, "%.0f" % v if v >= 100 else "%.3g" % v))
    o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/>' % (px(1.0), T, px(1.0), H - 30))
    o.append("</svg>")
    with open(path, "w") as fh:
        fh.write("\n".join(o) + "\n")


def plots(recs, out):
    ok = [r for r in recs if "error" not in r]
    series = {}
    for r in ok:
        if r["workload"] == "W2" and r["threads"] == 1 and r["system"] in ("gaussian", "numpy", "faiss-lsh"):
            name = ("simlsh " if r["kind"] == "simlsh" else "") + r["system"]
            series.setdefault(name, []).append((r["f"], r["throughput"]))
    svg_lines(series, "W2 dense signing, 1 thread: rows/s against f", "signature bits f", "rows per second",
              os.path.join(out, "w2_throughput_vs_f.svg"))
    bars = []
    for r in ok:
        if r["kind"] == "simlsh" or r["sweep"]:
            continue
        ref = reference(recs, r)
        if ref is not None:
            bars.append(("%s %s%s T%d" % (r["workload"], r["system"], " f%d" % r["f"] if r.get("f") else "", r["threads"]),
                         r["seconds_full"] / ref["seconds_full"]))
    if bars:
        svg_bars(bars, "simlsh speed-up over each peer (time of peer / time of simlsh, log scale)",
                 os.path.join(out, "speedup.svg"))


# ------------------------------------------------------------------ main
def verify_data(data, sums):
    bad = []
    for line in open(sums):
        parts = line.split()
        if len(parts) < 2:
            continue
        digest, name = parts[0], parts[1]
        h = hashlib.sha256()
        with open(os.path.join(data, name), "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
        if h.hexdigest() != digest:
            bad.append(name)
    return bad


def machine():
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        mem = "%.0f GiB" % (int(open("/proc/meminfo").readline().split()[1]) / 2 ** 20)
    except (OSError, ValueError, IndexError):
        pass
    return "%s, %d cores, %s RAM, Linux" % (model or "unknown CPU", CORES, mem)


def report(recs, out, smoke, seconds):
    """Writes OUT/synthetic.md (one table) and the SVG plots from the job records."""
    md = ["## Synthetic workloads W1-W5%s" % (" (smoke run: prefixes, one repetition)" if smoke else ""), "",
          "Machine: %s. Date: %s. Run time of this part: %.0f s." % (machine(), time.strftime("%Y-%m-%d"), seconds),
          "", "Times are medians of the timed operation alone (loading and input conversion excluded; index builds "
          "in their own column, and inside the time for the W4 self-join). `*`: run on a prefix of the rows or "
          "queries and extrapolated linearly. Speed simlsh / peer = time of the peer / time of the simlsh reference "
          "row with the same workload, f and thread count (> 1: simlsh is faster); memory simlsh / peer = ratio of "
          "peak resident memory of the two processes, which includes the loaded workload (< 1: simlsh uses less; "
          "the memory of a prefix run is not scaled up, so it understates a peer that holds per-row Python objects). "
          "Radius semantics: every row answers `distance <= 3`; FAISS `range_search` and gaoya return `distance < r`, "
          "so they are called with r = 4.", table(recs)]
    plots(recs, out)
    text = "\n".join(md) + "\n"
    with open(os.path.join(out, "synthetic.md"), "w") as fh:
        fh.write(text)
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data")
    ap.add_argument("--out", required=True)
    ap.add_argument("--worker")
    ap.add_argument("--gaoya", default="")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated workloads, e.g. W3,W5")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--verify", action="store_true",
                    help="only check the workload files in --data against the published SHA-256")
    ap.add_argument("--report", action="store_true",
                    help="only rewrite OUT/synthetic.md and the plots from OUT/synthetic.jsonl")
    args = ap.parse_args()
    if args.report:
        with open(os.path.join(args.out, "synthetic.jsonl")) as fh:
            recs = [json.loads(line) for line in fh if line.strip()]
        print(report(recs, args.out, any(r.get("sub") for r in recs if r["workload"] == "W2"),
                     sum(r.get("job_wall_s", 0) for r in recs)))
        return
    if not args.data or not (args.worker or args.verify):
        ap.error("--data and --worker are required (unless --report)")
    bad = verify_data(args.data, os.path.join(HERE, "expected-sha256.txt"))
    if bad:
        sys.exit("workload files differ from the published SHA-256: %s" % ", ".join(bad))
    print("workloads: all files match the published SHA-256 sums", file=sys.stderr)
    if args.verify:
        return
    jobs = plan(args.smoke, bool(args.gaoya))
    if args.only:
        want = {w.strip().upper() for w in args.only.split(",")}
        jobs = [j for j in jobs if j["workload"] in want]
    os.makedirs(args.out, exist_ok=True)
    recs, failures, cache = [], [], {}
    t0 = time.time()
    with open(os.path.join(args.out, "synthetic.jsonl"), "w") as fh:
        for i, j in enumerate(jobs):
            name = "%s/%s%s/T%d" % (j["workload"], j["system"], "/f%d" % j["f"] if j["f"] else "", j["threads"])
            out = os.path.join(args.out, "jobs", name.replace("/", "_"))
            rec = run(j, args, out, args.timeout)
            rec["job"] = name
            if "error" not in rec and not check(rec, args, out, cache):
                failures.append("%s: %s" % (name, rec.get("check_text")))
            if "error" in rec:
                failures.append("%s: %s" % (name, rec["error"].strip().splitlines()[-1] if rec["error"].strip() else "failed"))
            print("[%d/%d %4.0fs] %-36s %s %s" % (i + 1, len(jobs), time.time() - t0, name,
                                                "%.4gs" % rec["seconds_full"] if "seconds_full" in rec else "",
                                                rec.get("check_text", rec.get("error", ""))[:100]), file=sys.stderr)
            fh.write(json.dumps(rec, sort_keys=True) + "\n")
            recs.append(rec)
    print(report(recs, args.out, args.smoke, time.time() - t0))
    if failures:
        print("checks failed:\n  " + "\n  ".join(failures), file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
