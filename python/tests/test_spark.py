"""simlsh.spark against the in-process library and the command line: signatures bit for bit,
near-duplicate pairs and clusters equal for 1, 3 and 8 partitions, on generated data with
planted near duplicates and on the bundled tweets, in ``local[2]`` (one session for the run)
and in ``local-cluster[2,1,1024]`` (separate executor JVMs and Python workers: a driver run as
a subprocess, since one process holds one SparkContext); at the defaults, the pairs of
``simlsh dedup --cosine`` on the same rows.

Skipped only when pyspark is not importable; Java is a checked precondition (a clear failure,
not a skip, when ``java -version`` does not run).
"""

from __future__ import annotations

import csv
import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

import simlsh  # noqa: E402
from simlsh import _simlsh  # noqa: E402
from simlsh import spark as S  # noqa: E402
from simlsh.arrow import _string_buffers  # noqa: E402

from conftest import check_java, session  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
TWEETS = ROOT / "datasets" / "healthtweets-10k" / "healthtweets-10k.csv"
PARTITIONS = (1, 3, 8)


# ---------------------------------------------------------------------------------------------
# Data and the in-process oracle.


def generated_docs(n_base: int = 600, seed: int = 11) -> tuple[list[int], list[str], set[tuple[int, int]]]:
    """Random documents with planted near duplicates (one or two words changed of 40), exact
    copies and empty documents: ids (not in row order), texts, and the planted pairs."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(20_000)]
    docs, groups = [], []
    for g in range(n_base):
        base = list(rng.choice(vocab, 40))
        members = [len(docs)]
        docs.append(" ".join(base))
        for _ in range(int(rng.integers(0, 3))):
            v = list(base)
            for p in rng.choice(40, int(rng.integers(1, 3)), replace=False):
                v[p] = str(rng.choice(vocab))
            members.append(len(docs))
            docs.append(" ".join(v))
        if g % 7 == 0:
            members.append(len(docs))
            docs.append(docs[members[0]])
        groups.append(members)
    docs += ["", "   ", "!!"]
    ids = [int(x) for x in rng.permutation(len(docs)) * 3 + 5]
    truth = {(min(ids[a], ids[b]), max(ids[a], ids[b])) for m in groups for i, a in enumerate(m) for b in m[i + 1 :]}
    return ids, docs, truth


def tweets() -> tuple[list[int], list[str]]:
    with open(TWEETS, newline="", encoding="utf-8") as f:
        docs = [r["text"] for r in csv.DictReader(f)]
    return list(range(len(docs))), docs


def cosines_text(tok, a: list[str], b: list[str]) -> np.ndarray:
    ao, ad = _string_buffers(pa.array(a, pa.large_string()))
    bo, bd = _string_buffers(pa.array(b, pa.large_string()))
    return _simlsh.cosines_text(tok._core, ao, ad, bo, bd)


def library_candidates(codes: np.ndarray, scheme: simlsh.Scheme) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The single-machine join of the scheme: the exact Hamming join at the tables' radius,
    or the banded join."""
    if scheme.kind == "bands":
        return simlsh.banded_join(codes, scheme)
    radius = int(str(scheme).split("r=")[1].split(",")[0])
    return simlsh.self_join(codes, radius, bits=scheme.bits)


def oracle_text(ids, docs, *, threshold, signer, tok, scheme, verify=True) -> dict:
    """The in-process answer, as the command line finds it: the rows with features, the
    library's join of the scheme, candidates verified by the verified join's exact cosine
    (exact copies pair at distance 0)."""
    keep = [i for i, d in enumerate(docs) if tok.features(d)[0]]
    codes = signer.sign([docs[i] for i in keep], tokenizer=tok)
    i, j, d = library_candidates(codes, simlsh.Scheme(scheme))
    a = np.array([ids[keep[x]] for x in i], dtype=np.int64)
    b = np.array([ids[keep[x]] for x in j], dtype=np.int64)
    if verify:
        c = cosines_text(tok, [docs[keep[x]] for x in i], [docs[keep[x]] for x in j])
        ok = c >= threshold
    else:
        c = np.cos(np.pi * d / signer.bits)
        ok = np.ones(len(d), bool)
    return {(min(x, y), max(x, y)): (int(z), float(w)) for x, y, z, w, k in zip(a, b, d, c, ok) if k}


def same_pairs(got: dict, want: dict, what: str) -> None:
    """The same pairs, distances and cosines (to 1e-12: sums of the same products in another
    order)."""
    assert got.keys() == want.keys(), f"{what}: {len(got)} pairs vs {len(want)}; " \
        f"missing {sorted(set(want) - set(got))[:5]}, extra {sorted(set(got) - set(want))[:5]}"
    for p, (d, c) in got.items():
        assert d == want[p][0] and c == pytest.approx(want[p][1], abs=1e-12), (what, p, (d, c), want[p])


def check_truth(got: dict, planted: set, ids, docs, tok, threshold: float) -> None:
    """The known truth: planted pairs whose exact cosine reaches the threshold (random
    documents of 40 words from 20,000 share almost none). Nothing else is reported, and at most
    the binomial bound of misses at the planner's 99% recall (mean + 4 sd) is missed."""
    row = {v: r for r, v in enumerate(ids)}
    pl = sorted(planted)
    c = cosines_text(tok, [docs[row[a]] for a, _ in pl], [docs[row[b]] for _, b in pl])
    truth = {p for p, x in zip(pl, c) if x >= threshold}
    assert len(truth) > 200
    got = set(got)
    assert set(got) <= truth, f"unplanted pairs {sorted(set(got) - truth)[:5]}"
    missed = len(truth - set(got))
    mean = 0.01 * len(truth)
    assert missed <= mean + 4 * math.sqrt(mean) + 1, f"missed {missed} of {len(truth)} true pairs"


def as_dict(rows) -> dict:
    return {(r.a, r.b): (r.distance, r.cosine) for r in rows}


def run_text(spark, ids, docs, parts: int, **kw):
    df = spark.createDataFrame(list(zip(ids, docs)), "id bigint, text string").repartition(parts)
    pairs, report = S.near_duplicates(df, "id", "text", partitions=parts, return_report=True, **kw)
    rows = pairs.collect()
    got = as_dict(rows)
    assert len(got) == len(rows), "a pair was reported twice"
    return got, report


def check_text_equal(spark, ids, docs, parts, *, threshold, signer, tok, **kw):
    got, report = run_text(spark, ids, docs, parts, threshold=threshold, signer=signer, tokenizer=tok, **kw)
    fitted = tok.fit(docs)
    want = oracle_text(
        ids, docs, threshold=threshold, signer=signer, tok=fitted, scheme=report["scheme"],
        verify=kw.get("verify", True),
    )
    same_pairs(got, want, f"{parts} partitions")
    return got, report


# ---------------------------------------------------------------------------------------------
# local[2]


def test_signatures_equal_the_library(spark):
    from pyspark.ml.linalg import Vectors

    rng = np.random.default_rng(3)
    ids, docs, _ = generated_docs(40)
    tok = simlsh.Tokenizer().fit(docs)
    for bits in (64, 200):
        signer = simlsh.HashingTrick(bits=bits, seed=9)
        df = spark.createDataFrame(list(zip(ids, docs)), "id bigint, text string").repartition(3)
        rows = sorted(S.signatures(df, "text", signer, tokenizer=tok).collect())
        want = signer.sign([r.text for r in rows], tokenizer=tok)
        got = np.array([[r.fp] if bits <= 64 else r.fp for r in rows], dtype=np.int64).view(np.uint64)
        np.testing.assert_array_equal(got, want)
    # Dense rows (array<float>), a Gaussian signer rebuilt on the executors from its seed.
    X = rng.standard_normal((300, 24)).astype(np.float32)
    signer = simlsh.HyperplaneSigner(dim=24, bits=128, seed=4)
    df = spark.createDataFrame([(i, X[i].tolist()) for i in range(len(X))], "id bigint, v array<float>")
    rows = sorted(S.signatures(df.repartition(3), "v", signer).collect())
    np.testing.assert_array_equal(np.array([r.fp for r in rows], dtype=np.int64).view(np.uint64), signer.sign(X))
    # Sparse rows: Spark ML vectors (sparse and dense), and (indices, values) columns.
    import scipy.sparse as sp

    M = sp.random(200, 1000, density=0.02, format="csr", dtype=np.float32, random_state=5)
    M.sort_indices()
    signer = simlsh.HashingTrick(bits=64, seed=2)
    want = signer.sign(M).view(np.int64)[:, 0]
    vec = [(i, Vectors.sparse(1000, M[i].indices.tolist(), M[i].data.astype(float).tolist()) if i % 2 else
            Vectors.dense(M[i].toarray()[0].astype(float).tolist())) for i in range(200)]
    df = spark.createDataFrame(vec, ["id", "v"])
    got = {r.id: r.fp for r in S.signatures(df, "v", signer).collect()}
    assert [got[i] for i in range(200)] == want.tolist()
    lists = [(i, M[i].indices.tolist(), M[i].data.tolist()) for i in range(200)]
    df = spark.createDataFrame(lists, "id bigint, ix array<int>, vals array<float>")
    got = {r.id: r.fp for r in S.signatures(df, ("ix", "vals"), signer).collect()}
    assert [got[i] for i in range(200)] == want.tolist()


def test_signature_errors(spark):
    df = spark.createDataFrame([(1, 2)], "id bigint, x int")
    with pytest.raises(TypeError, match="cannot sign column `x`"):
        S.signatures(df, "x", simlsh.HashingTrick(bits=64))
    with pytest.raises(KeyError, match="no column `y`"):
        S.signatures(df, "y", simlsh.HashingTrick(bits=64))
    with pytest.raises(ValueError, match="threshold"):
        S.near_duplicates(spark.createDataFrame([(1, "a")], "id bigint, t string"), "id", "t", threshold=1.5)


def test_defaults_give_the_command_lines_pairs(spark, cli, tmp_path):
    """The main job at every front end's defaults: ``simlsh dedup --cosine 0.9`` and
    ``near_duplicates(df, "id", "text", threshold=0.9)`` on the bundled tweets give the same
    pairs (the tokenizer, IDF, width, signer, seed and scheme all the library's defaults)."""
    from conftest import run_cli

    ids, docs = tweets()
    pairs = tmp_path / "pairs.tsv"
    run_cli(cli, "dedup", TWEETS, "--cosine", "0.9", "--pairs", pairs, "--stats", tmp_path / "s.json")
    stats = json.loads((tmp_path / "s.json").read_text())["values"]
    want = {}
    for line in pairs.read_text().splitlines()[1:]:
        a, b, d, c = line.split("\t")
        want[(int(a), int(b))] = (int(d), float(c))
    assert len(want) > 100
    df = spark.createDataFrame(list(zip(ids, docs)), "id bigint, text string").repartition(3)
    got_df, report = S.near_duplicates(df, "id", "text", threshold=0.9, return_report=True)
    got = as_dict(got_df.collect())
    assert report["scheme"] == stats["scheme"] and report["bits"] == stats.get("bits_planned", 256)
    for p, (d, c) in got.items():  # the command line writes cosines to 6 decimals
        assert p in want and d == want[p][0] and c == pytest.approx(want[p][1], abs=5e-7), p
    assert got.keys() == want.keys()


def test_the_plan_is_the_command_lines(spark):
    """The width grows with the rows as the command line plans it (its memory filter aside):
    at 10^6 rows of 40 features the planned width is wider than 256 bits, and Spark's plan
    equals the library planner's on the same rows and mean features."""
    ids, docs, _ = generated_docs(150, seed=4)
    df = spark.createDataFrame(list(zip(ids, docs)), "id bigint, text string")
    signer, tok, p = S.plan(df, "text", 0.8)
    fitted = simlsh.Tokenizer().fit(docs)
    step = _simlsh.feature_sample_step(len(docs))
    mean = _simlsh.mean_features(fitted._core, docs[::step])
    want = simlsh.plan_join(0.8, rows=len(docs), features=mean)
    assert (signer.bits, str(p["scheme"])) == (want["bits"], str(want["scheme"]))
    assert signer.spec == _simlsh.default_signer("text", signer.bits) and signer.seed == _simlsh.defaults()["seed"]
    assert tok.idf == fitted.idf
    assert simlsh.plan_join(0.8, rows=10**6, features=40)["bits"] > 256


@pytest.mark.parametrize("parts", PARTITIONS)
def test_generated_text_equals_library(spark, parts):
    """Planted near duplicates: the Spark pairs equal the in-process join's, and recover the
    planted pairs (all of them: each is far above the threshold, where the planned recall is
    essentially 1)."""
    ids, docs, truth = generated_docs()
    signer, tok = simlsh.HashingTrick(bits=256, seed=1), simlsh.Tokenizer()
    got, report = check_text_equal(spark, ids, docs, parts, threshold=0.8, signer=signer, tok=tok)
    assert report["empty"] == 3 and report["rows"] == len(docs)
    check_truth(got, truth, ids, docs, tok.fit(docs), 0.8)


@pytest.mark.parametrize("parts", PARTITIONS)
def test_tweets_equal_library(spark, parts):
    ids, docs = tweets()
    signer, tok = simlsh.HashingTrick(bits=256, seed=7), simlsh.Tokenizer()
    got, report = check_text_equal(spark, ids, docs, parts, threshold=0.7, signer=signer, tok=tok)
    assert len(got) > 100  # re-posted headlines: the bundled sample has many near duplicates


def test_banded_hot_keys_and_collapse_on_or_off(spark):
    """A banding with a small hot-key cap, with and without the exact-duplicate step: capped
    runs are listed, and the pairs still equal the library's banded join with the same cap
    (pairs found by their first uncapped band; copies take their representative's pairs)."""
    ids, docs, _ = generated_docs(300, seed=5)
    docs = docs + ["w1 w2 w3 w4 w5 w6"] * 12  # a hot key in every band
    ids = ids + [10_000 + i for i in range(12)]
    signer, tok = simlsh.HashingTrick(bits=128, seed=3), simlsh.Tokenizer()
    scheme = "bands:f=128,b=16,w=8,d=40,cap=6"
    for parts, collapse in ((1, False), (3, False), (3, True)):
        got, report = run_text(
            spark, ids, docs, parts, threshold=0.6, signer=signer, tokenizer=tok, scheme=scheme,
            collapse_exact=collapse,
        )
        want = oracle_text(ids, docs, threshold=0.6, signer=signer, tok=tok.fit(docs), scheme=scheme)
        if collapse:
            # Collapsed, the 12 copies are one row: no run is capped, so their pairs are found
            # (the in-process join caps them and finds them by no other band), and so are the
            # pairs that shared a capped run with them: a superset, every extra pair verified.
            copies = {(a, b) for a in ids[-12:] for b in ids[-12:] if a < b}
            assert copies <= got.keys() and not copies & want.keys()
            extra = {p: v for p, v in got.items() if p not in want}
            assert all(c >= 0.6 for _, c in extra.values())
            got = {p: v for p, v in got.items() if p in want}
        same_pairs(got, want, f"{parts} partitions, collapse {collapse}")
        assert report["scheme"] == scheme
        assert report["capped"], report
        assert all(rows > 6 for _, _, rows in report["capped"])


def test_probed_banding_equals_the_in_memory_probed_join(spark):
    """A multi-probe banding (keys one bit apart collide) run on Spark, where each band is
    keyed twice (one half of its bits cleared in each copy), gives the candidates of the
    library's in-memory probed banded join exactly, with and without a hot-key cap (pairs
    found by their first uncapped band, the second pass included), and, verified, the
    in-process answer; probing finds pairs the plain banding misses."""
    ids, docs, _ = generated_docs(300, seed=9)
    docs = docs + ["w7 w8 w9 w10 w11 w12"] * 12  # a hot key in every band
    ids = ids + [20_000 + i for i in range(12)]
    signer, tok = simlsh.HashingTrick(bits=128, seed=4), simlsh.Tokenizer()
    fitted = tok.fit(docs)
    keep = [i for i, d in enumerate(docs) if fitted.features(d)[0]]
    codes = signer.sign([docs[i] for i in keep], tokenizer=fitted)
    plain = simlsh.banded_join(codes, simlsh.Scheme("bands:f=128,b=6,w=14,d=60"))
    for scheme, parts in (("bands:f=128,b=6,w=14,d=60,probes=1", 3), ("bands:f=128,b=6,w=13,d=60,cap=6,probes=1", 1),
                          ("bands:f=128,b=6,w=13,d=60,cap=6,probes=1", 4)):
        i, j, d = simlsh.banded_join(codes, simlsh.Scheme(scheme))
        want = {}
        for x, y, z in zip(i, j, d):
            a, b = sorted((ids[keep[x]], ids[keep[y]]))
            want[(a, b)] = (int(z), math.cos(math.pi * z / 128))
        got, report = run_text(
            spark, ids, docs, parts, threshold=0.6, signer=signer, tokenizer=tok, scheme=scheme, verify=False,
            collapse_exact=False,
        )
        same_pairs(got, want, f"{scheme}, {parts} partitions")
        assert report["scheme"] == scheme
        assert bool(report["capped"]) == ("cap=6" in scheme), report
        if "w=14" in scheme:
            assert len(want) > len(plain[0]), (len(want), len(plain[0]))
        check_text_equal(spark, ids, docs, parts, threshold=0.6, signer=signer, tok=tok, scheme=scheme,
                         collapse_exact=False)


def test_tables_hot_keys_unverified(spark):
    """Manku's tables at a radius, capped hot keys, no verification: every pair within the
    radius that agrees on an uncapped table key, with the estimated cosine."""
    ids, docs, _ = generated_docs(300, seed=8)
    docs = docs + ["alpha beta gamma delta"] * 10
    ids = ids + [50_000 + i for i in range(10)]
    signer, tok = simlsh.HashingTrick(bits=64, seed=2), simlsh.Tokenizer(weighting="tf")
    df = spark.createDataFrame(list(zip(ids, docs)), "id bigint, text string")
    scheme = simlsh.Scheme.tables(64, 3, rows=len(docs), max_group=4)
    pairs, report = S.near_duplicates(
        df, "id", "text", threshold=0.9, signer=signer, tokenizer=tok, scheme=scheme, verify=False,
        collapse_exact=False, partitions=3, return_report=True,
    )
    got = as_dict(pairs.collect())
    assert report["capped"] and report["scheme"] == str(scheme)
    keep = [i for i, d in enumerate(docs) if tok.features(d)[0]]
    codes = signer.sign([docs[i] for i in keep], tokenizer=tok)
    keys = scheme.keys(codes)
    capped = {(c[0], c[1] & (2**64 - 1)) for c in report["capped"]}
    i, j, d = simlsh.self_join(codes, 3)
    want = {}
    for x, y, z in zip(i, j, d):
        shared = [t for t in range(keys.shape[1]) if keys[x, t] == keys[y, t] and (t, int(keys[x, t])) not in capped]
        if shared:
            a, b = sorted((ids[keep[x]], ids[keep[y]]))
            want[(a, b)] = (int(z), math.cos(math.pi * z / 64))
    assert got.keys() == want.keys()
    for p, (dist, c) in got.items():
        assert dist == want[p][0] and c == pytest.approx(want[p][1], abs=1e-12)


@pytest.mark.parametrize("parts", (1, 8))
def test_dense_and_sparse_equal_verified_join(spark, parts):
    """Vectors: Spark's pairs equal simlsh.verified_join's (exact duplicates not collapsed)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(21)
    base = rng.standard_normal((300, 32)).astype(np.float32)
    X = np.concatenate([base, base[:80] + 0.15 * rng.standard_normal((80, 32)).astype(np.float32)])
    X[7] = 0.0  # a zero row is never paired
    ids = (np.arange(len(X)) * 2 + 1).tolist()
    signer = simlsh.HyperplaneSigner(dim=32, bits=128, seed=6)
    df = spark.createDataFrame([(ids[r], X[r].tolist()) for r in range(len(X))], "id bigint, v array<float>")
    for kw in (dict(radius=20), dict(scheme="bands:f=128,b=8,w=16,d=40")):
        got = as_dict(S.near_duplicates(df.repartition(parts), "id", "v", signer=signer, threshold=0.9,
                                        collapse_exact=False, partitions=parts, **kw).collect())
        i, j, d, c = simlsh.verified_join(signer.sign(X), X, 0.9, **kw)
        want = {(ids[x], ids[y]): (int(z), float(w)) for x, y, z, w in zip(i, j, d, c)}
        assert got == want and len(want) >= 60
    M = sp.csr_matrix(np.where(np.abs(X) > 0.8, X, 0).astype(np.float32))
    M.sort_indices()
    signer = simlsh.HashingTrick(bits=128, seed=6)
    rows = [(ids[r], M[r].indices.tolist(), M[r].data.tolist()) for r in range(M.shape[0])]
    df = spark.createDataFrame(rows, "id bigint, ix array<int>, vals array<float>")
    got = as_dict(S.near_duplicates(df.repartition(parts), "id", ("ix", "vals"), signer=signer, threshold=0.8,
                                    radius=25, collapse_exact=False, partitions=parts).collect())
    i, j, d, c = simlsh.verified_join(signer.sign(M), M, 0.8, radius=25)
    want = {(ids[x], ids[y]): (int(z), float(w)) for x, y, z, w in zip(i, j, d, c)}
    assert got == want and len(want) >= 20


def test_clusters_driver_and_star(spark):
    """Connected components by union-find on the driver and by large-star/small-star in the
    DataFrame API equal the library's, on a graph with a long path, a star and singletons."""
    rng = np.random.default_rng(2)
    path = [(i, i + 1) for i in range(100, 140)]
    star = [(500, 500 + k) for k in range(1, 20)]
    rand = [tuple(int(v) for v in rng.choice(np.arange(1000, 1060), 2, replace=False)) for _ in range(40)]
    edges = path + star + rand + [(rng_b, rng_a) for rng_a, rng_b in path[::5]]
    df = spark.createDataFrame(edges, "a bigint, b bigint").repartition(3)
    ids = spark.createDataFrame([(v,) for v in (7, 8, 100)], "id bigint")
    nodes = np.unique(np.array(edges + [(7, 8)]).reshape(-1))
    idx = {v: k for k, v in enumerate(nodes)}
    lab = simlsh.clusters(len(nodes), [idx[a] for a, _ in edges], [idx[b] for _, b in edges])
    want = {int(v): int(nodes[lab[idx[v]]]) for v in nodes}
    for limit in (None, 0):
        kw = {} if limit is None else {"max_driver_edges": limit}
        got = {r.id: r.cluster for r in S.clusters(df, ids=ids, **kw).collect()}
        assert got == want, f"max_driver_edges={limit}"


# ---------------------------------------------------------------------------------------------
# local-cluster[2,1,1024]: a separate driver process.


def cluster_main() -> None:
    """Runs in a subprocess: the generated data and the tweets for 1, 3 and 8 partitions on
    local-cluster[2,1,1024]; prints a JSON summary, fails by an assertion."""
    s = session("local-cluster[2,1,1024]")
    try:
        assert s.sparkContext.defaultParallelism == 2
        out = {}
        gids, gdocs, truth = generated_docs()
        tids, tdocs = tweets()
        signer, tok = simlsh.HashingTrick(bits=256, seed=1), simlsh.Tokenizer()
        for parts in PARTITIONS:
            got, _ = check_text_equal(s, gids, gdocs, parts, threshold=0.8, signer=signer, tok=tok)
            check_truth(got, truth, gids, gdocs, tok.fit(gdocs), 0.8)
            got2, _ = check_text_equal(s, tids, tdocs, parts, threshold=0.7, signer=signer, tok=tok)
            out[parts] = [len(got), len(got2)]
        # The executors are other processes: they rebuilt the signer from its parameters.
        pids = s.sparkContext.parallelize(range(4), 4).map(lambda _: os.getpid()).collect()
        assert os.getpid() not in pids
        print(json.dumps(out))
    finally:
        s.stop()


def test_local_cluster_equals_library():
    check_java()
    r = subprocess.run(
        [sys.executable, __file__, "--local-cluster"], capture_output=True, text=True, timeout=900,
        cwd=str(ROOT),
    )
    assert r.returncode == 0, f"local-cluster driver failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
    counts = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(counts) == {str(p) for p in PARTITIONS}
    assert len({tuple(v) for v in counts.values()}) == 1


if __name__ == "__main__" and sys.argv[1:] == ["--local-cluster"]:
    cluster_main()
