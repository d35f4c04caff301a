"""Parquet both ways between pyarrow (as Spark, pandas and polars write it) and the command
line: every kind of input column reads as its equivalent plain file, and the pairs and
clusters the command line writes read back in pyarrow with the documented columns."""

import pathlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest


from conftest import ROOT, read_fvecs, run_cli

TWEETS = ROOT / "datasets" / "healthtweets-10k" / "healthtweets-10k.csv"
GLOVE = ROOT / "datasets" / "glove-6B-50d-10k" / "vectors.fvecs"


def read_tsv_pairs(path: pathlib.Path) -> set:
    lines = path.read_text().splitlines()[1:]
    return {tuple(l.split("\t")[:2]) for l in lines}


def test_text_column_with_ids_gives_the_pairs_of_the_csv(cli, tmp_path):
    import csv

    with open(TWEETS, newline="") as f:
        rows = list(csv.DictReader(f))
    table = pa.table({"source_id": [r["source_id"] for r in rows], "text": [r["text"] for r in rows]})
    pq.write_table(table, tmp_path / "tweets.parquet")
    run_cli(cli, "dedup", str(TWEETS), "--cosine", "0.8", "--bits", "256", "--id-field", "source_id",
            "--pairs", str(tmp_path / "csv.tsv"))
    run_cli(cli, "dedup", str(tmp_path / "tweets.parquet"), "--cosine", "0.8", "--bits", "256",
            "--id-field", "source_id", "--pairs", str(tmp_path / "pq.parquet"),
            "--clusters", str(tmp_path / "clusters.parquet"))
    want = read_tsv_pairs(tmp_path / "csv.tsv")
    assert len(want) > 100
    got = pq.read_table(tmp_path / "pq.parquet")
    assert got.schema.names == ["a", "b", "distance", "cosine"]
    assert got.schema.field("a").type == pa.string()
    assert got.schema.field("distance").type == pa.int32()
    assert got.schema.metadata[b"simlsh.cosine"] == b"exact"
    assert {(a, b) for a, b in zip(got["a"].to_pylist(), got["b"].to_pylist())} == want
    assert min(got["cosine"].to_pylist()) >= 0.8
    clusters = pq.read_table(tmp_path / "clusters.parquet")
    assert clusters.schema.names == ["id", "cluster"]
    assert clusters.num_rows == len(rows)


@pytest.mark.parametrize("kind", ["list", "fixed", "large"])
def test_dense_list_columns_read_as_the_fvecs(cli, tmp_path, kind):
    x = read_fvecs(GLOVE)[:3000]
    flat = pa.array(x.reshape(-1))
    if kind == "fixed":
        col = pa.FixedSizeListArray.from_arrays(flat, x.shape[1])
    elif kind == "large":
        col = pa.LargeListArray.from_arrays(np.arange(0, x.size + 1, x.shape[1], dtype=np.int64), flat)
    else:
        col = pa.ListArray.from_arrays(np.arange(0, x.size + 1, x.shape[1], dtype=np.int32), flat.cast(pa.float64()))
    pq.write_table(pa.table({"vector": col}), tmp_path / "x.parquet")
    np.asarray(x, dtype="<f4")
    fv = tmp_path / "x.fvecs"
    with open(fv, "wb") as f:
        for row in x:
            f.write(np.int32(len(row)).tobytes())
            f.write(row.astype("<f4").tobytes())
    a = run_cli(cli, "knn", str(fv), "--k", "3", "--signer", "gaussian")
    b = run_cli(cli, "knn", str(tmp_path / "x.parquet"), "--field", "vector", "--k", "3", "--signer", "gaussian")
    assert a == b


def test_spark_ml_vectors_and_index_value_lists_read_as_sparse_rows(cli, tmp_path):
    rng = np.random.default_rng(3)
    n, dim = 500, 1000
    rows = []
    for _ in range(n):
        idx = np.sort(rng.choice(dim, size=rng.integers(1, 30), replace=False)).astype(np.int32)
        rows.append((idx, rng.normal(size=len(idx))))
    # A Spark ML SparseVector column: struct<type: int8, size: int32, indices: array<int32>, values: array<double>>.
    ml = pa.StructArray.from_arrays(
        [pa.array([0] * n, pa.int8()), pa.array([dim] * n, pa.int32()),
         pa.array([r[0] for r in rows], pa.list_(pa.int32())), pa.array([r[1] for r in rows], pa.list_(pa.float64()))],
        names=["type", "size", "indices", "values"])
    pq.write_table(pa.table({"features": ml}), tmp_path / "ml.parquet")
    pq.write_table(pa.table({"indices": pa.array([r[0] for r in rows], pa.list_(pa.int64())),
                             "values": pa.array([r[1].astype(np.float32) for r in rows], pa.list_(pa.float32()))}),
                   tmp_path / "lists.parquet")
    import scipy.sparse as sp
    m = sp.csr_matrix((np.concatenate([r[1] for r in rows]).astype(np.float32),
                       np.concatenate([r[0] for r in rows]),
                       np.cumsum([0] + [len(r[0]) for r in rows])), shape=(n, dim))
    sp.save_npz(tmp_path / "m.npz", m, compressed=False)
    args = ["sign", "--signer", "hashing-trick", "--bits", "128"]
    run_cli(cli, "sign", str(tmp_path / "m.npz"), str(tmp_path / "a.npy"), *args[1:])
    run_cli(cli, "sign", str(tmp_path / "ml.parquet"), str(tmp_path / "b.npy"), "--field", "features", *args[1:])
    run_cli(cli, "sign", str(tmp_path / "lists.parquet"), str(tmp_path / "c.npy"), "--field", "indices,values", *args[1:])
    a, b, c = (np.load(tmp_path / f) for f in ["a.npy", "b.npy", "c.npy"])
    assert a.shape == (n, 2)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_bigint_codes_as_spark_writes_them_read_as_the_same_bits(cli, tmp_path):
    rng = np.random.default_rng(9)
    words = rng.integers(0, 2**64, size=(400, 2), dtype=np.uint64)
    words[1::2] = words[::2]
    words[1::2, 0] ^= np.uint64(0b101)  # pairs at distance 2
    signed = words.view(np.int64)  # Spark's bigint: the same bit patterns
    pq.write_table(pa.table({"sig": pa.array(list(signed), pa.list_(pa.int64()))}), tmp_path / "codes.parquet")
    np.save(tmp_path / "codes.npy", words)
    want = run_cli(cli, "dedup", str(tmp_path / "codes.npy"), "--radius", "3")
    got = run_cli(cli, "dedup", str(tmp_path / "codes.parquet"), "--field", "sig", "--radius", "3")
    assert got == want and "pairs 200" in got
    one = pa.table({"fp": pa.array(signed[:, 0])})
    pq.write_table(one, tmp_path / "one.parquet")
    out = run_cli(cli, "dedup", str(tmp_path / "one.parquet"), "--field", "fp", "--radius", "3", "--pairs", str(tmp_path / "p.parquet"))
    assert "f = 64" in out
    pairs = pq.read_table(tmp_path / "p.parquet")
    assert pairs.schema.field("a").type == pa.int64()
    assert pairs.schema.metadata[b"simlsh.cosine"] == b"estimated"
    assert pairs.num_rows == 200


def test_a_missing_column_is_named(cli, tmp_path):
    import subprocess

    pq.write_table(pa.table({"body": ["a b", "c d"]}), tmp_path / "t.parquet")
    r = subprocess.run([str(cli), "dedup", str(tmp_path / "t.parquet")], capture_output=True, text=True)
    assert r.returncode == 1
    assert "no column `text`" in r.stderr and "body" in r.stderr


def _fails(cli, *args) -> str:
    import subprocess

    r = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "panicked" not in r.stderr
    return r.stderr


def test_a_null_inside_a_list_is_an_error_naming_row_and_column(cli, tmp_path):
    vec = pa.array([[1.0, 2.0], [3.0, None], [5.0, 6.0]], pa.list_(pa.float32()))
    pq.write_table(pa.table({"v": vec}), tmp_path / "v.parquet")
    err = _fails(cli, "sign", tmp_path / "v.parquet", tmp_path / "o.npy", "--field", "v")
    assert "row 1" in err and "element 1" in err and "`v`" in err and "null" in err
    codes = pa.array([[1, 2], [None, 4]], pa.list_(pa.int64()))
    pq.write_table(pa.table({"c": codes}), tmp_path / "c.parquet")
    err = _fails(cli, "dedup", tmp_path / "c.parquet", "--field", "c", "--radius", "1")
    assert "row 1" in err and "element 0" in err and "`c`" in err
    for which in ("indices", "values"):
        idx = [[0, 3], [1, 2]]
        val = [[1.0, 2.0], [3.0, 4.0]]
        (idx if which == "indices" else val)[1][1] = None
        ml = pa.StructArray.from_arrays(
            [pa.array([0, 0], pa.int8()), pa.array([5, 5], pa.int32()),
             pa.array(idx, pa.list_(pa.int32())), pa.array(val, pa.list_(pa.float64()))],
            names=["type", "size", "indices", "values"])
        pq.write_table(pa.table({"features": ml}), tmp_path / "ml.parquet")
        err = _fails(cli, "sign", tmp_path / "ml.parquet", tmp_path / "o.npy", "--field", "features")
        assert "row 1" in err and f"features.{which}" in err and "null" in err, err
        pq.write_table(pa.table({"indices": pa.array(idx, pa.list_(pa.int64())),
                                 "values": pa.array(val, pa.list_(pa.float64()))}), tmp_path / "l.parquet")
        err = _fails(cli, "sign", tmp_path / "l.parquet", tmp_path / "o.npy", "--field", "indices,values")
        assert "row 1" in err and f"`{which}`" in err and "null" in err, err


def test_columns_that_are_not_lists_are_refused_as_indices_and_values(cli, tmp_path):
    pq.write_table(pa.table({"indices": pa.array([1, 2], pa.int64()), "values": pa.array([0.5, 1.5])}),
                   tmp_path / "flat.parquet")
    err = _fails(cli, "sign", tmp_path / "flat.parquet", tmp_path / "o.npy", "--field", "indices,values")
    assert "`indices`" in err and "expected a list" in err


def test_a_damaged_footer_is_an_error_not_a_panic(cli, tmp_path):
    import subprocess

    pq.write_table(pa.table({"text": ["a b c", "b c d", "x y z"] * 50}), tmp_path / "t.parquet")
    data = (tmp_path / "t.parquet").read_bytes()
    footer = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - footer
    # One bit flipped in about 150 bytes spread over the footer's metadata (the command line's
    # Parquet fuzz test, cli/tests/cli_fuzz.rs, covers more).
    outcomes = []
    for k in range(start, len(data) - 8, max(1, footer // 150)):
        b = bytearray(data)
        b[k] ^= 1 << (k % 8)
        (tmp_path / "bad.parquet").write_bytes(bytes(b))
        r = subprocess.run([str(cli), "-q", "dedup", str(tmp_path / "bad.parquet"), "--radius", "3"],
                           capture_output=True, text=True)
        assert r.returncode in (0, 1) and "panicked" not in r.stderr, (k, r.returncode, r.stderr)
        if r.returncode == 1:
            assert "bad.parquet" in r.stderr, r.stderr
        outcomes.append(r.returncode)
    assert outcomes.count(1) > len(outcomes) // 4, outcomes


def test_duplicate_ids_are_refused(cli, tmp_path):
    pq.write_table(pa.table({"id": ["a", "b", "a"], "text": ["x y", "y z", "z w"]}), tmp_path / "d.parquet")
    err = _fails(cli, "dedup", tmp_path / "d.parquet", "--id-field", "id", "--radius", "3")
    assert "row 2" in err and "duplicate id `a`" in err and "row 0" in err


def test_dictionary_strings_and_lz4_brotli_files_read_as_plain_ones(cli, tmp_path):
    import pandas as pd

    texts = ["the quick brown fox", "the quick brown dog", "lorem ipsum dolor"] * 20
    ids = [f"r{i}" for i in range(len(texts))]
    pq.write_table(pa.table({"id": ids, "text": texts}), tmp_path / "plain.parquet")
    want = run_cli(cli, "dedup", str(tmp_path / "plain.parquet"), "--id-field", "id", "--radius", "3",
                   "--weighting", "tf")
    df = pd.DataFrame({"id": pd.Categorical(ids), "text": pd.Categorical(texts)})
    df.to_parquet(tmp_path / "cat.parquet")
    assert pa.types.is_dictionary(pq.read_schema(tmp_path / "cat.parquet").field("text").type)
    got = run_cli(cli, "dedup", str(tmp_path / "cat.parquet"), "--id-field", "id", "--radius", "3",
                  "--weighting", "tf")
    assert got == want
    for codec in ("lz4", "brotli"):
        pq.write_table(pa.table({"id": ids, "text": texts}), tmp_path / f"{codec}.parquet", compression=codec)
        got = run_cli(cli, "dedup", str(tmp_path / f"{codec}.parquet"), "--id-field", "id", "--radius", "3",
                      "--weighting", "tf")
        assert got == want, codec


def test_integer_vector_values_read_as_numbers(cli, tmp_path):
    idx = [[0, 3], [1, 2], [0, 3]]
    pq.write_table(pa.table({"indices": pa.array(idx, pa.list_(pa.int32())),
                             "values": pa.array([[1, 2], [3, 4], [2, 4]], pa.list_(pa.int64()))}),
                   tmp_path / "ints.parquet")
    pq.write_table(pa.table({"indices": pa.array(idx, pa.list_(pa.int32())),
                             "values": pa.array([[1.0, 2.0], [3.0, 4.0], [2.0, 4.0]], pa.list_(pa.float32()))}),
                   tmp_path / "floats.parquet")
    run_cli(cli, "sign", str(tmp_path / "ints.parquet"), str(tmp_path / "a.npy"), "--field", "indices,values")
    run_cli(cli, "sign", str(tmp_path / "floats.parquet"), str(tmp_path / "b.npy"), "--field", "indices,values")
    a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[0], a[2])  # the same direction
    strings = pa.array([["1", "2"], ["3", "4"], ["2", "4"]], pa.list_(pa.string()))
    pq.write_table(pa.table({"indices": pa.array(idx, pa.list_(pa.int32())), "values": strings}),
                   tmp_path / "strings.parquet")
    err = _fails(cli, "sign", tmp_path / "strings.parquet", tmp_path / "c.npy", "--field", "indices,values")
    assert "expected numbers" in err and "NaN" not in err


def test_exact_dedup_pairs_have_no_distance_column(cli, tmp_path):
    # `dedup --exact` finds pairs without signatures: columns a, b, cosine, the TSV's pairs.
    run_cli(cli, "dedup", str(TWEETS), "--cosine", "0.8", "--exact", "--pairs", str(tmp_path / "p.tsv"))
    run_cli(cli, "dedup", str(TWEETS), "--cosine", "0.8", "--exact", "--pairs", str(tmp_path / "p.parquet"))
    want = read_tsv_pairs(tmp_path / "p.tsv")
    assert len(want) > 100
    got = pq.read_table(tmp_path / "p.parquet")
    assert got.schema.names == ["a", "b", "cosine"]
    assert got.schema.metadata[b"simlsh.cosine"] == b"exact"
    pairs = {(str(a), str(b)) for a, b in zip(got.column("a").to_pylist(), got.column("b").to_pylist())}
    assert pairs == want
    assert min(got.column("cosine").to_pylist()) >= 0.8
