"""Per-core throughput of the Spark near-duplicate job against the single-process command
line, on the same poems (the 312k Tang and Song poems of the shared datasets, or any JSON
Lines file of {id, text}).

    python python/bench/spark_poems.py --poems DIR --cli target/release/simlsh [--master local[1]]

Both sides use the same tokenizer (characters, bigrams, tf weights), signer (hashing trick,
256 bits, seed 0; ``--bits 0``: the width the planner chooses and the library's default
signer) and threshold (exact cosine >= 0.8, candidates planned for 99% recall, ``--probes``
passed to the planner).
The CLI runs with ``--threads 1``; Spark with ``local[1]`` (one task at a time) unless told
otherwise, so both figures are per core. Spark's stages are timed by running the pipeline
cumulatively (signatures; candidates without verification; verified pairs; clusters) into
Spark's ``noop`` sink and differencing; Spark's own metrics of the verified run (every stage's
executor CPU time, shuffle records and bytes written, from the application's status store, as
the REST API ``api/v1/applications/<app>/stages`` serves them) give the bytes shuffled per
document. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time


def load(poems: pathlib.Path, limit: int | None):
    files = sorted(poems.glob("*.jsonl.gz")) + sorted(poems.glob("*.jsonl"))
    ids, texts = [], []
    for f in files:
        op = gzip.open if f.suffix == ".gz" else open
        with op(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    ids.append(len(ids))
                    texts.append(json.loads(line)["text"])
                    if limit and len(ids) >= limit:
                        return ids, texts
    return ids, texts


def tree_cpu() -> float:
    """CPU seconds (user + system) of this process and all its descendants (the JVM, the
    Python workers), children that ended included: the job's CPU time whatever ran it."""
    return sum(tree_cpu_by_kind().values())


def tree_cpu_by_kind() -> dict[str, float]:
    """:func:`tree_cpu` split between the JVM (``java``) and Python (this driver and the
    workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for d in pathlib.Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                f = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            kind = "java" if "java" in (d / "comm").read_text() else "python"
            procs[int(d.name)] = (int(f[1]), sum(int(x) for x in f[11:15]), kind)
    mine, todo = set(), [os.getpid()]
    while todo:
        p = todo.pop()
        mine.add(p)
        todo += [c for c, (pp, _, _) in procs.items() if pp == p and c not in mine]
    out = {"java": 0.0, "python": 0.0}
    for p in mine:
        if p in procs:
            out[procs[p][2]] += procs[p][1] / tick
    return out


def stages(spark) -> list[dict]:
    """Every stage attempt the application ran so far, with Spark's task metrics summed over
    its tasks (the status store behind the UI and the REST API: it is kept with the UI off)."""
    st = spark.sparkContext._jsc.sc().statusStore()
    defaults = [getattr(st, f"stageList$default${k}")() for k in (2, 3, 4, 5)]
    seq = st.stageList(None, *defaults)
    out = []
    for i in range(seq.length()):
        s = seq.apply(i)
        out.append({
            "id": s.stageId(), "name": s.name().split(" at ")[0], "tasks": s.numTasks(),
            "cpu_s": s.executorCpuTime() / 1e9, "run_s": s.executorRunTime() / 1e3,
            "shuffle_write_bytes": s.shuffleWriteBytes(), "shuffle_write_records": s.shuffleWriteRecords(),
            "shuffle_read_bytes": s.shuffleReadBytes(),
        })
    return sorted(out, key=lambda r: r["id"])


def since(spark, seen: set[int]) -> list[dict]:
    """The stages run since ``seen`` (stage ids), which is updated."""
    new = [s for s in stages(spark) if s["id"] not in seen]
    seen.update(s["id"] for s in new)
    return new


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--poems", type=pathlib.Path, required=True)
    ap.add_argument("--cli", type=pathlib.Path)
    ap.add_argument("--master", default="local[1]")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--bits", type=int, default=256, help="hashing-trick width; 0: the width the planner chooses, "
                    "signed by the library's default signer (both sides)")
    ap.add_argument("--probes", type=int, help="the planner's multi-probe distance (default: the library's)")
    args = ap.parse_args()

    import pyarrow as pa
    import pyarrow.parquet as pq

    ids, texts = load(args.poems, args.limit)
    n = len(ids)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="simlsh-bench-"))
    parquet = tmp / "poems.parquet"
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "text": texts}), parquet, row_group_size=20_000)
    out: dict = {"documents": n, "bytes": parquet.stat().st_size, "threshold": args.threshold,
                 "load": os.getloadavg()[0]}

    width = ["--signer", "hashing-trick", "--bits", str(args.bits)] if args.bits else []
    probes = ["--probes", str(args.probes)] if args.probes is not None else []
    if args.cli:
        stats = tmp / "cli-stats.json"
        t, c = time.perf_counter(), tree_cpu()
        subprocess.run(
            [str(args.cli), "dedup", str(parquet), "--field", "text", "--mode", "chars", "--ngram", "2",
             "--weighting", "tf", *width, *probes, "--cosine", str(args.threshold),
             "--threads", "1", "--quiet", "--stats", str(stats), "--pairs", str(tmp / "cli-pairs.parquet"),
             "--clusters", str(tmp / "cli-clusters.parquet")],
            check=True,
        )
        secs, cpu_s = time.perf_counter() - t, tree_cpu() - c
        cl = pq.read_table(tmp / "cli-clusters.parquet").column("cluster").to_numpy()
        out["cli"] = {"seconds": secs, "cpu_seconds": cpu_s, "docs_per_core_s": n / secs,
                      "docs_per_cpu_s": n / cpu_s,
                      "pairs": pq.read_metadata(tmp / "cli-pairs.parquet").num_rows,
                      "clusters": int(len(set(cl.tolist()))), "stats": json.loads(stats.read_text())}

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import simlsh
    from simlsh import spark as S

    spark = (
        SparkSession.builder.master(args.master)
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(args.partitions)).config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    cores = spark.sparkContext.defaultParallelism
    df = spark.read.parquet(str(parquet)).repartition(args.partitions).localCheckpoint()
    signer = simlsh.HashingTrick(bits=args.bits, seed=0) if args.bits else None
    tok = simlsh.Tokenizer(mode="chars", ngram=2, weighting="tf")

    cpu: dict[str, float] = {}

    def timed(make, what):
        t, c = time.perf_counter(), tree_cpu()
        make().write.format("noop").mode("overwrite").save()
        cpu[what] = tree_cpu() - c
        return time.perf_counter() - t

    kw = dict(threshold=args.threshold, signer=signer, tokenizer=tok, partitions=args.partitions, probes=args.probes)
    # The candidates alone: the planned scheme, unverified.
    planned_signer, _, plan = S.plan(df, "text", args.threshold, signer=signer, tokenizer=tok, probes=args.probes)
    cand_kw = dict(kw, signer=planned_signer, scheme=plan["scheme"])
    seen: set[int] = set()
    since(spark, seen)
    t_sign = timed(lambda: S.signatures(df, "text", planned_signer, tokenizer=tok), "sign")
    t_cand = timed(lambda: S.near_duplicates(df, "id", "text", verify=False, **cand_kw), "candidates_incl_sign")
    spark.catalog.clearCache()
    since(spark, seen)
    t, c, ck = time.perf_counter(), tree_cpu(), tree_cpu_by_kind()
    pairs, report = S.near_duplicates(df, "id", "text", return_report=True, **kw)
    pairs = pairs.localCheckpoint()
    t_ver = time.perf_counter() - t
    cpu["verified_incl_sign"] = tree_cpu() - c
    cpu["verified_by_kind"] = {k: v - ck[k] for k, v in tree_cpu_by_kind().items()}
    verified = since(spark, seen)
    npairs = pairs.count()
    t, c = time.perf_counter(), tree_cpu()
    labels = S.clusters(pairs, ids=df.select("id")).localCheckpoint()
    nclusters = labels.select("cluster").distinct().count()
    t_cl = time.perf_counter() - t
    cpu["clusters"] = tree_cpu() - c
    spark.stop()
    out["spark"] = {
        "master": args.master, "cores": cores, "partitions": args.partitions, "scheme": report["scheme"],
        "representatives": report["representatives"], "empty": report["empty"],
        "pairs": npairs, "clusters": nclusters,
        "verified_run": {
            "stages": verified, "cpu_s": sum(s["cpu_s"] for s in verified),
            "shuffle_write_bytes": sum(s["shuffle_write_bytes"] for s in verified),
            "shuffle_bytes_per_doc": sum(s["shuffle_write_bytes"] for s in verified) / n,
            "shuffle_write_records": sum(s["shuffle_write_records"] for s in verified),
        },
        "cpu_seconds": cpu,
        "docs_per_cpu_s_end_to_end": n / (cpu["verified_incl_sign"] + cpu["clusters"]),
        "seconds": {"sign": t_sign, "candidates_incl_sign": t_cand, "verified_incl_sign": t_ver, "clusters": t_cl},
        "docs_per_core_s": {
            "sign": n / (t_sign * cores), "join": n / (max(t_cand - t_sign, 1e-9) * cores),
            "verify": n / (max(t_ver - t_cand, 1e-9) * cores), "end_to_end": n / ((t_ver + t_cl) * cores),
        },
    }
    print(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
