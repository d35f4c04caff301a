"""Per-core throughput of the Spark near-duplicate job against the single-process command
line, on the same poems (the 312k Tang and Song poems of the shared datasets, or any JSON
Lines file of {id, text}).

    python python/bench/spark_poems.py --poems DIR --cli target/release/simlsh [--master local[1]]

Both sides use the same tokenizer (characters, bigrams, tf weights), signer (hashing trick,
256 bits, seed 0) and threshold (exact cosine >= 0.8, candidates planned for 99% recall).
The CLI runs with ``--threads 1``; Spark with ``local[1]`` (one task at a time) unless told
otherwise, so both figures are per core. Spark's stages are timed by running the pipeline
cumulatively (signatures; candidates without verification; verified pairs; clusters) into
Spark's ``noop`` sink and differencing. Prints one JSON object.
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--poems", type=pathlib.Path, required=True)
    ap.add_argument("--cli", type=pathlib.Path)
    ap.add_argument("--master", default="local[1]")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--threshold", type=float, default=0.8)
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

    if args.cli:
        stats = tmp / "cli-stats.json"
        t = time.perf_counter()
        subprocess.run(
            [str(args.cli), "dedup", str(parquet), "--field", "text", "--mode", "chars", "--ngram", "2",
             "--weighting", "tf", "--signer", "hashing-trick", "--bits", "256", "--cosine", str(args.threshold),
             "--threads", "1", "--quiet", "--stats", str(stats), "--pairs", str(tmp / "cli-pairs.parquet"),
             "--clusters", str(tmp / "cli-clusters.parquet")],
            check=True,
        )
        secs = time.perf_counter() - t
        cl = pq.read_table(tmp / "cli-clusters.parquet").column("cluster").to_numpy()
        out["cli"] = {"seconds": secs, "docs_per_core_s": n / secs,
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
    signer = simlsh.HashingTrick(bits=256, seed=0)
    tok = simlsh.Tokenizer(mode="chars", ngram=2, weighting="tf")

    def timed(make):
        t = time.perf_counter()
        make().write.format("noop").mode("overwrite").save()
        return time.perf_counter() - t

    kw = dict(threshold=args.threshold, signer=signer, tokenizer=tok, partitions=args.partitions)
    t_sign = timed(lambda: S.signatures(df, "text", signer, tokenizer=tok))
    t_cand = timed(lambda: S.near_duplicates(df, "id", "text", verify=False, **kw))
    spark.catalog.clearCache()
    t = time.perf_counter()
    pairs, report = S.near_duplicates(df, "id", "text", return_report=True, **kw)
    pairs = pairs.localCheckpoint()
    t_ver = time.perf_counter() - t
    npairs = pairs.count()
    t = time.perf_counter()
    labels = S.clusters(pairs, ids=df.select("id")).localCheckpoint()
    nclusters = labels.select("cluster").distinct().count()
    t_cl = time.perf_counter() - t
    spark.stop()
    out["spark"] = {
        "master": args.master, "cores": cores, "partitions": args.partitions, "scheme": report["scheme"],
        "representatives": report["representatives"], "empty": report["empty"],
        "pairs": npairs, "clusters": nclusters,
        "seconds": {"sign": t_sign, "candidates_incl_sign": t_cand, "verified_incl_sign": t_ver, "clusters": t_cl},
        "docs_per_core_s": {
            "sign": n / (t_sign * cores), "join": n / (max(t_cand - t_sign, 1e-9) * cores),
            "verify": n / (max(t_ver - t_cand, 1e-9) * cores), "end_to_end": n / ((t_ver + t_cl) * cores),
        },
    }
    print(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
