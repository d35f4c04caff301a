"""Arrow batch functions: signatures of a column, codes to and from Arrow, the per-batch
self-join and clusters, against the NumPy functions."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import simlsh
from simlsh import arrow
from conftest import random_codes


def test_signatures_of_a_text_column(tweets):
    docs = tweets[:1000]
    batch = pa.record_batch({"id": pa.array(np.arange(1000, 2000), pa.int32()), "text": docs})
    tok = simlsh.Tokenizer(ngram=2)
    for bits in (64, 128):
        s = simlsh.HashingTrick(bits=bits, seed=5)
        out = arrow.signatures(batch, "text", s, tokenizer=tok)
        assert out.schema.names == ["id", "fp"] and out.column("id").type == pa.int64()
        assert out.column("id").to_pylist() == list(range(1000, 2000))
        want = s.sign(docs, tokenizer=tok)
        fp = out.column("fp")
        assert fp.type == (pa.int64() if bits == 64 else pa.list_(pa.int64()))
        np.testing.assert_array_equal(arrow.codes_from_arrow(fp), want)
        np.testing.assert_array_equal(arrow.codes_from_arrow(arrow.codes_to_arrow(want)), want)
    table = pa.Table.from_batches([batch.slice(0, 400), batch.slice(400)])
    out = arrow.signatures(table, "text", simlsh.HashingTrick(bits=64, seed=5), id_column=None)
    assert out.schema.names == ["fp"] and len(out) == 1000


def test_nulls_and_bad_columns_name_the_row():
    s = simlsh.HashingTrick(bits=64)
    with pytest.raises(ValueError, match="row 2: null document"):
        s.sign(pa.array(["a", "b", None]))
    chunked = pa.chunked_array([pa.array(["a", "b"]), pa.array(["c", None])])
    with pytest.raises(ValueError, match="row 3: null document"):
        s.sign(chunked)
    with pytest.raises(ValueError, match="ragged rows: row 1 has 1 values, row 0 has 2"):
        simlsh.HyperplaneSigner(dim=2, bits=8).sign(pa.array([[1.0, 2.0], [3.0]]))
    with pytest.raises(TypeError, match="cannot sign an Arrow column of type int64"):
        s.sign(pa.array([1, 2, 3]))
    with pytest.raises(KeyError, match="no column `body`"):
        arrow.signatures(pa.record_batch({"text": ["a"]}), "body", s)


def test_self_join_and_clusters_of_a_batch_equal_the_numpy_functions():
    rng = np.random.default_rng(2)
    codes = random_codes(rng, 3000, 64, planted=800)
    ids = rng.choice(10**12, 3000, replace=False).astype(np.int64)
    batch = pa.record_batch({"id": ids, "fp": arrow.codes_to_arrow(codes)})
    pairs = arrow.self_join(batch, radius=3)
    i, j, d = simlsh.self_join(codes, 3)
    a, b = np.minimum(ids[i], ids[j]), np.maximum(ids[i], ids[j])
    assert sorted(zip(pairs.column("a").to_pylist(), pairs.column("b").to_pylist())) == sorted(zip(a.tolist(), b.tolist()))
    assert pairs.column("distance").to_pylist() == d.tolist()
    comps = arrow.clusters(pairs, ids=ids)
    labels = simlsh.clusters(len(codes), i, j)
    root_of = dict(zip(comps.column("id").to_pylist(), comps.column("root").to_pylist()))
    assert len(root_of) == len(codes)
    for row in range(len(codes)):
        members = np.flatnonzero(labels == labels[row])
        assert root_of[int(ids[row])] == int(ids[members].min())
