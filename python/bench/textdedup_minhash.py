"""text-dedup's Spark MinHash recipe (``text_dedup/minhash_spark.py`` of the PyPI wheel
``text-dedup==0.4.0``), timed on the same poems as ``spark_poems.py``, for a per-core
comparison with ``simlsh.spark``.

    pip download --no-deps text-dedup==0.4.0 && unzip text_dedup-0.4.0-py3-none-any.whl -d td
    pip install xxhash scipy
    python python/bench/textdedup_minhash.py --text-dedup td --poems DIR [--master local[1]]

Only the MinHash-and-bands stage runs offline: the recipe's connected components use
GraphFrames, whose jar Spark resolves from Maven Central at start-up (``graphframes`` on PyPI
holds no jar). That import is stubbed and the stage is run as the recipe writes it
(``rdd.flatMap(generate_hash_values)``, ``groupBy((band, hash))``, ``flatMap(generate_edges)``,
``distinct()``), up to the edges, with its own parameters (250 permutations, its optimal
bands and rows for the threshold). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from spark_poems import load  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--text-dedup", type=pathlib.Path, required=True, help="the unpacked wheel")
    ap.add_argument("--poems", type=pathlib.Path, required=True)
    ap.add_argument("--master", default="local[1]")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--num-perm", type=int, default=250)
    ap.add_argument("--ngram", type=int, default=2)
    args = ap.parse_args()

    # The recipe's module alone (the package's __init__ pulls in unrelated dependencies), with
    # an empty `graphframes` beside it (the jar is not offline); the executors' Python workers
    # get both through PYTHONPATH.
    stub = pathlib.Path(tempfile.mkdtemp(prefix="graphframes-stub-"))
    (stub / "graphframes.py").write_text("GraphFrame = None  # not offline\n")
    paths = [str(stub), str(args.text_dedup.resolve() / "text_dedup")]
    sys.path[:0] = paths
    os.environ["PYTHONPATH"] = os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")])
    import json

    import numpy as np
    import minhash_spark as M

    ids, texts = load(args.poems, args.limit)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(args.master)
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(args.partitions)).config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    cores = spark.sparkContext.defaultParallelism
    df = spark.createDataFrame(list(zip(ids, texts)), "id bigint, text string").repartition(args.partitions).localCheckpoint()
    B, R = M.optimal_param(args.threshold, args.num_perm)
    ranges = [(i * R, (i + 1) * R) for i in range(B)]
    perms = (
        M.RNG.randint(1, M.MOD_PRIME, size=(args.num_perm,), dtype=M.DTYPE),
        M.RNG.randint(0, M.MOD_PRIME, size=(args.num_perm,), dtype=M.DTYPE),
    )
    num_perm, ngram = args.num_perm, args.ngram
    t = time.perf_counter()
    edges = (
        df.select("id", "text")
        .rdd.flatMap(lambda x: M.generate_hash_values(x[1], x[0], num_perm, ngram, 0, ranges, perms))
        .groupBy(lambda x: (x[0], x[1]))
        .flatMap(lambda x: M.generate_edges([e[2] for e in x[1]]))
        .distinct()
    )
    n_edges = edges.count()
    secs = time.perf_counter() - t
    spark.stop()
    print(json.dumps({
        "documents": len(ids), "master": args.master, "cores": cores, "bands": B, "rows": R,
        "num_perm": num_perm, "ngram": ngram, "edges": n_edges, "seconds_minhash_to_edges": secs,
        "docs_per_core_s": len(ids) / (secs * cores), "load": os.getloadavg()[0],
        "connected_components": "not run: GraphFrames' jar needs Maven Central",
        "np": np.__version__,
    }, indent=1))


if __name__ == "__main__":
    main()
