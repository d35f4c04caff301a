"""Deduplicates the bundled tweets on a local Spark: near-duplicate pairs at cosine >= 0.8
(exact, verified), connected components, one tweet kept per cluster; writes Parquet that the
command line reads back, and checks that round trip when ``simlsh`` (the CLI) is at hand.

    pip install "./python[spark]"        # PySpark 4, pyarrow; Java 17 must be installed
    python python/examples/spark_dedup.py [--master local[2]] [--out spark-dedup] [--cli path/to/simlsh]

Writes ``OUT/pairs.parquet`` (a, b, distance, cosine), ``OUT/clusters.parquet`` (id, cluster)
and ``OUT/kept.parquet`` (id, source_id, text: one tweet per cluster), each a single Parquet
file. With the CLI: ``simlsh dedup OUT/kept.parquet --field text ...`` with the same tokenizer,
signer and threshold finds no pair among the kept tweets, and ``simlsh dedup`` of the original
CSV makes as many clusters as Spark did.
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
TWEETS = ROOT / "datasets" / "healthtweets-10k" / "healthtweets-10k.csv"
THRESHOLD, BITS, SEED = 0.8, 256, 0
# The command line's equivalent of the tokenizer and signer below.
CLI_OPTS = ["--field", "text", "--mode", "words", "--weighting", "tf", "--signer", "hashing-trick",
            "--bits", str(BITS), "--seed", str(SEED), "--cosine", str(THRESHOLD), "--quiet"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--out", default="spark-dedup", type=pathlib.Path)
    ap.add_argument("--cli", default=shutil.which("simlsh"), help="the simlsh command line, for the round trip")
    args = ap.parse_args()

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyarrow.parquet as pq
    from pyspark.sql import SparkSession

    import simlsh
    from simlsh import spark as S

    spark = (
        SparkSession.builder.master(args.master).appName("simlsh-dedup")
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    with open(TWEETS, newline="", encoding="utf-8") as f:
        rows = [(i, r["source_id"], r["text"]) for i, r in enumerate(csv.DictReader(f))]
    tweets = spark.createDataFrame(rows, "id bigint, source_id string, text string")

    t = time.perf_counter()
    signer = simlsh.HashingTrick(bits=BITS, seed=SEED)
    tok = simlsh.Tokenizer(mode="words", weighting="tf")
    pairs, report = S.near_duplicates(
        tweets, "id", "text", threshold=THRESHOLD, signer=signer, tokenizer=tok, return_report=True
    )
    pairs = pairs.localCheckpoint()
    labels = S.clusters(pairs, ids=tweets.select("id"))
    kept = tweets.join(labels, "id").where("id = cluster").select("id", "source_id", "text").orderBy("id")

    args.out.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, df in (("pairs", pairs.orderBy("a", "b")), ("clusters", labels.orderBy("id")), ("kept", kept)):
        # One file each (the CLI reads files, Spark writes directories of part files).
        with tempfile.TemporaryDirectory(dir=args.out) as tmp:
            df.coalesce(1).write.mode("overwrite").parquet(tmp + "/d")
            part = next(pathlib.Path(tmp, "d").glob("part-*.parquet"))
            out[name] = args.out / f"{name}.parquet"
            shutil.move(part, out[name])
    secs = time.perf_counter() - t
    n_kept = pq.read_metadata(out["kept"]).num_rows
    print(f"{len(rows)} tweets: {pq.read_metadata(out['pairs']).num_rows} pairs at cosine >= {THRESHOLD} "
          f"({report['scheme']}), {report['empty']} without words, {n_kept} kept, {secs:.1f} s on {args.master}")
    for path in out.values():
        print(f"  {path}")
    spark.stop()

    if args.cli:
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([args.cli, "dedup", str(out["kept"]), *CLI_OPTS, "--id-field", "source_id",
                                "--pairs", f"{tmp}/again.parquet"], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            again = pq.read_table(f"{tmp}/again.parquet").num_rows
            r = subprocess.run([args.cli, "dedup", str(TWEETS), *CLI_OPTS, "--clusters", f"{tmp}/cli.parquet"],
                               capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            cli_kept = len(set(pq.read_table(f"{tmp}/cli.parquet").column("cluster").to_pylist()))
        print(f"CLI round trip: {again} pairs among the kept tweets (0 expected); the CLI on the CSV keeps "
              f"{cli_kept} tweets, Spark {n_kept}")
        assert again == 0, "the CLI found near duplicates among the tweets Spark kept"


if __name__ == "__main__":
    main()
