"""Near-duplicate detection on Apache Spark: DataFrame in, DataFrame out, with the command
line's answers.

Install with the ``spark`` extra (``pip install "simlsh[spark]"``: PySpark 4, pyarrow; Java
17 on every machine). The package must be importable by the executors' Python
(``PYSPARK_PYTHON``); nothing else is shipped: signers, tokenizers and schemes travel as their
parameters (a TF-IDF table as its arrays) and are rebuilt on each executor (a Gaussian matrix
is regenerated from its seed, never broadcast).

The steps, each a DataFrame function:

- :func:`fit_tokenizer` fits the TF-IDF table of a text column (per-partition counts merged in
  a tree), and :func:`plan` makes the plan of ``simlsh dedup --cosine``: the signer at the
  width planned for the rows, and the candidate scheme (:class:`simlsh.Scheme`).
- :func:`signatures` signs a text column (``string``), a sparse one (a Spark ML ``Vector``
  column, a ``struct<indices, values>``, or two list columns ``(indices, values)``) or a dense
  one (``array<float>``/``array<double>``, or a dense Spark ML vector) with ``mapInArrow``,
  one native call per Arrow batch. Signatures are ``bigint`` (``f <= 64``) or
  ``array<bigint>`` (one entry per 64-bit word): **Spark has no unsigned 64-bit type**, so a
  word travels as its bit pattern (``fp & 0xFFFF_FFFF_FFFF_FFFF`` in Python, ``uint64`` in
  NumPy/Arrow readers gives the word back).
- :func:`near_duplicates` pairs the rows of a DataFrame whose cosine is at least a threshold.
  One ``mapInArrow`` pass signs each batch and computes its keys, one per band (a banding of
  wide signatures; two per band when it probes) or per permuted table (Manku et al.'s tables
  for a Hamming radius), and emits **one row per document and partition its keys go to**
  (the partition's hash-partitioning value, the groups keyed there as a bit mask, the
  signature as bytes, a 128-bit content hash): a signature is shuffled once per partition
  it meets, not once per group. Then **one shuffle**, and a native sort-and-scan of each
  partition (the library's ``join::partition``: one call per partition, never per row or
  group) that reports each pair once, by the first group its signatures agree on, so that no
  ``distinct()`` is needed. Exact copies share a signature, so every partition holds all the
  copies of its rows' contents: the scan keeps one representative of each and lists the
  copies. Candidates are then verified by their exact cosine (their ids broadcast to a filter
  of the input, two joins of those rows) unless ``verify=False``. Runs of more rows than the
  scheme's cap under one key (hot keys) are skipped and their pairs looked for in the other
  groups (a second scan, only when some run was capped).
- :func:`clusters` labels connected components of the pairs: Rust union-find on the driver
  when the edges fit (``max_driver_edges``, 16 bytes an edge on the driver: the default 50
  million edges is 800 MB), else large-star/small-star iterations in the DataFrame API.

The answers equal the command line's and the in-process library's for the same parameters,
whatever the number of partitions or executors.
"""

from __future__ import annotations

import math
from typing import Any
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from . import _simlsh
from .arrow import (
    _dense_values, _first_null, _string_buffers, codes_to_arrow,
)
from .join import Scheme, _scheme, plan_join
from .signers import Signer, signer as make_signer
from .text import Idf, Tokenizer, _merge_idf

__all__ = ["signatures", "near_duplicates", "clusters", "fit_tokenizer", "plan", "MAX_DRIVER_EDGES"]

#: Default edge count up to which :func:`clusters` collects the edges to the driver (16 bytes
#: an edge as two ``int64``, plus the union-find's 8 bytes a node: about 1 GB at 50 million).
MAX_DRIVER_EDGES = 50_000_000

# Two seeds of XXH3-64 give a 128-bit content identity for exact duplicates.
_HASH_SEEDS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F)


def _spark():
    try:
        import pyspark.sql.functions as F
        import pyspark.sql.types as T
        from pyspark.sql import DataFrame
    except ImportError as e:  # pragma: no cover - exercised only without pyspark
        raise ImportError('simlsh.spark needs PySpark 4: pip install "simlsh[spark]"') from e
    return F, T, DataFrame


# ---------------------------------------------------------------------------------------------
# Columns: what a column holds, and reading it from an Arrow batch.


class _Input:
    """How to read the features of a row: ``kind`` (``text``, ``dense``, ``sparse``) and the
    column names; picklable, so that executors get it with the batch functions."""

    def __init__(self, kind: str, cols: tuple[str, ...], dim: int | None = None):
        self.kind, self.cols, self.dim = kind, cols, dim


def _resolve_input(df, col) -> tuple[Any, _Input]:
    """The DataFrame with the feature columns in Arrow-friendly types, and how to read them."""
    F, T, _ = _spark()
    if isinstance(col, (tuple, list)):
        if len(col) != 2:
            raise ValueError(f"a sparse column pair is (indices, values), got {col!r}")
        i, v = col
        for c, want in ((i, (T.IntegerType, T.LongType)), (v, (T.FloatType, T.DoubleType))):
            t = df.schema[c].dataType
            if not (isinstance(t, T.ArrayType) and isinstance(t.elementType, want)):
                raise TypeError(f"column `{c}` must be an array of {'integers' if c == i else 'floats'}, got {t.simpleString()}")
        return df, _Input("sparse", (i, v))
    if col not in df.columns:
        raise KeyError(f"no column `{col}` in {df.columns}")
    t = df.schema[col].dataType
    if isinstance(t, T.StringType):
        return df, _Input("text", (col,))
    if isinstance(t, T.ArrayType) and isinstance(t.elementType, (T.FloatType, T.DoubleType)):
        return df, _Input("dense", (col,))
    if isinstance(t, T.UserDefinedType) and t.simpleString() == "vector":
        return _vector_struct(df, col)
    if isinstance(t, T.StructType) and {"indices", "values"} <= set(t.fieldNames()):
        return (
            df.withColumn("__simlsh_i", F.col(f"{col}.indices")).withColumn("__simlsh_v", F.col(f"{col}.values")),
            _Input("sparse", ("__simlsh_i", "__simlsh_v")),
        )
    raise TypeError(
        f"cannot sign column `{col}` of type {t.simpleString()}: expected string, array<float>, "
        "a Spark ML vector, a struct<indices, values>, or an (indices, values) pair of columns"
    )


def _vector_struct(df, col):
    """A Spark ML vector column as ``indices``/``values`` list columns (dense vectors as
    ``values`` with ``indices`` null), read in the JVM by ``pyspark.ml.functions``."""
    F, _, _ = _spark()
    # The vector's storage struct, without a Python call per row: Spark ML vectors serialise
    # to struct<type: tinyint, size: int, indices: array<int>, values: array<double>>, which
    # `to_json` exposes; reading that back with a fixed schema gives the fields as columns.
    schema = "struct<type:tinyint,size:int,indices:array<int>,values:array<double>>"
    parsed = F.from_json(F.to_json(F.struct(F.col(col).alias("v"))), f"struct<v:{schema}>").getField("v")
    dense = parsed.getField("type") == F.lit(1)
    n = F.size(parsed.getField("values"))
    idx = F.when(dense, F.sequence(F.lit(0), n - 1)).otherwise(parsed.getField("indices"))
    idx = F.when(n == 0, F.array().cast("array<int>")).otherwise(idx)
    df = df.withColumn("__simlsh_i", idx).withColumn("__simlsh_v", parsed.getField("values"))
    return df, _Input("sparse", ("__simlsh_i", "__simlsh_v"))


def _one_chunk(arr):
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _csr(batch, inp: _Input) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A batch's sparse rows as canonical CSR arrays (``int64`` indptr and indices, ``float32``
    data)."""
    i, v = (_one_chunk(batch.column(c)) for c in inp.cols)
    for arr, what in ((i, "indices"), (v, "values")):
        null = _first_null(arr)
        if null is not None:
            raise ValueError(f"row {null}: null {what} list")
    io = i.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    vo = v.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    if not np.array_equal(np.diff(io), np.diff(vo)):
        r = int(np.flatnonzero(np.diff(io) != np.diff(vo))[0])
        raise ValueError(f"row {r}: {io[r + 1] - io[r]} indices but {vo[r + 1] - vo[r]} values")
    ind = i.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
    val = v.flatten().to_numpy(zero_copy_only=False).astype(np.float32)
    # The library's canonical rows: sorted, duplicates summed in float64 (as the command line
    # reads a sparse file), so that signatures and exact cosines are the command line's.
    return _simlsh.canonical_csr(io - io[0], ind, val)


def _texts(batch, inp: _Input):
    arr = _one_chunk(batch.column(inp.cols[0]))
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    return _string_buffers(arr)


def _features(batch, inp: _Input, signer: Signer, tok: Tokenizer):
    """The signatures of a batch's rows, whether each has features (a nonzero vector), and
    the two content hashes of each row."""
    core = signer._core
    n = batch.num_rows
    if inp.kind == "text":
        offsets, data = _texts(batch, inp)
        codes, counts = _simlsh.sign_text_counts(core, offsets, data, tok._core)
        has = counts > 0
        o64 = offsets.astype(np.int64)
        h = [_simlsh.row_hashes(o64, data, s) for s in _HASH_SEEDS]
    elif inp.kind == "dense":
        x = np.ascontiguousarray(_dense_values(_one_chunk(batch.column(inp.cols[0]))))
        codes = (core.sign_dense_f32 if x.dtype == np.float32 else core.sign_dense_f64)(x)
        has = np.any(x != 0, axis=1)
        raw = x.view(np.uint8).reshape(-1)
        row = x.shape[1] * x.dtype.itemsize
        offs = np.arange(0, (n + 1) * row, max(row, 1), dtype=np.int64)[: n + 1]
        h = [_simlsh.row_hashes(offs, raw, s) for s in _HASH_SEEDS]
    else:
        indptr, ind, val = _csr(batch, inp)
        cols = signer.dim if signer.dim is not None else (int(ind.max()) + 1 if ind.size else 1)
        codes = core.sign_csr(indptr, ind, val, cols)
        nonzero = np.concatenate([[0], np.cumsum(val != 0)])
        has = nonzero[indptr[1:]] > nonzero[indptr[:-1]]
        # The content is the row's (index, value) entries: both byte ranges hashed.
        ib, vb = ind.view(np.uint8), val.view(np.uint8)
        h = [
            _simlsh.row_hashes(indptr * 8, ib, s) ^ _simlsh.row_hashes(indptr * 4, vb, s ^ 0x5BD1E995)
            for s in _HASH_SEEDS
        ]
    return codes, np.asarray(has, dtype=bool), h


def _fp_type(bits: int):
    _, T, _ = _spark()
    return T.LongType() if bits <= 64 else T.ArrayType(T.LongType())


# ---------------------------------------------------------------------------------------------
# signatures


def signatures(
    df,
    col,
    signer: Signer | None = None,
    *,
    tokenizer: Tokenizer | None = None,
    out_col: str = "fp",
):
    """``df`` with a signature column ``out_col`` added: ``bigint`` for signatures of at most
    64 bits, else ``array<bigint>`` (one entry per 64-bit word, bit ``j`` in word ``j // 64``);
    a word is the ``uint64`` bit pattern (Spark has no unsigned 64-bit type), equal, bit for
    bit, to ``simlsh sign`` and :meth:`simlsh.Signer.sign` of the same rows.

    ``col`` names a ``string`` column (documents, tokenised by ``tokenizer``: by default the
    command line's, TF-IDF weights fitted on the whole column by :func:`fit_tokenizer`), an
    ``array<float>``/``array<double>`` column (dense rows of one length), a Spark ML vector
    column or a ``struct<indices, values>`` column (sparse rows), or is a pair ``(indices,
    values)`` of array columns. ``signer`` defaults to the command line's (the library's
    default kind for the input, its default width and seed); it is sent to the executors as
    its parameters. Nulls fail the job with a ``ValueError`` naming the row of the batch.
    """
    F, T, _ = _spark()
    if out_col in df.columns:
        raise ValueError(f"column `{out_col}` exists already")
    src, inp = _resolve_input(df, col)
    if signer is None:
        d = _simlsh.defaults()
        signer = make_signer(_simlsh.default_signer(inp.kind, d["bits"]), bits=d["bits"], seed=d["seed"])
    if not isinstance(signer, Signer):
        raise TypeError(f"signer must be a simlsh.Signer, got {type(signer).__name__}")
    tok = fit_tokenizer(src, inp.cols[0], tokenizer) if inp.kind == "text" else None
    helpers = [c for c in src.columns if c.startswith("__simlsh_")]
    schema = T.StructType(src.schema.fields + [T.StructField(out_col, _fp_type(signer.bits), True)])

    def sign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            codes, _, _ = _features(b, inp, signer, tok) if b.num_rows else (np.zeros((0, signer.words), np.uint64), None, None)
            yield pa.RecordBatch.from_arrays([*b.columns, codes_to_arrow(codes)], names=[*b.schema.names, out_col])

    out = src.mapInArrow(sign, schema)
    return out.drop(*helpers) if helpers else out


def fit_tokenizer(df, col: str, tokenizer: Tokenizer | None = None) -> Tokenizer:
    """``tokenizer`` (default: the command line's, :class:`simlsh.Tokenizer()`) with its TF-IDF
    table fitted on the documents of the ``string`` column ``col``, as ``simlsh dedup`` fits
    on its input: each partition counts its documents' feature frequencies in Rust and the
    tables are merged in a tree (:meth:`simlsh.Idf.merge`), so the table equals the one
    fitted on the whole column in one process. A tokenizer that is fitted already (or needs
    no table) is returned as it is."""
    tok = tokenizer if tokenizer is not None else Tokenizer()
    if not isinstance(tok, Tokenizer):
        raise TypeError(f"tokenizer must be a simlsh.Tokenizer, got {type(tok).__name__}")
    if tok.is_fitted:
        return tok

    _, T, _ = _spark()
    schema = T.StructType([
        T.StructField("docs", T.LongType(), False), T.StructField("keys", T.BinaryType(), False),
        T.StructField("dfs", T.BinaryType(), False), T.StructField("config", T.StringType(), False),
    ])
    inp = _Input("text", (col,))

    def count(batches):
        for b in batches:
            if not b.num_rows:
                continue
            offsets, data = _texts(b, inp)
            core = _simlsh.Idf.fit_arrow(tok._core, offsets, data, threads=1)
            docs, keys, dfs, config = core.parts()
            yield pa.RecordBatch.from_arrays(
                [pa.array([docs], pa.int64()), pa.array([keys.tobytes()], pa.binary()),
                 pa.array([dfs.tobytes()], pa.binary()), pa.array([config])],
                names=["docs", "keys", "dfs", "config"],
            )

    def table(row) -> Idf:
        keys = np.frombuffer(row.keys, dtype=np.uint64)
        dfs = np.frombuffer(row.dfs, dtype=np.uint32)
        return Idf(_simlsh.Idf.from_parts(row.docs, keys.copy(), dfs.copy(), row.config))

    parts = df.select(col).mapInArrow(count, schema).rdd.map(table)
    if parts.isEmpty():
        return tok.fit([])
    idf = parts.treeReduce(lambda a, b: _merge_idf([a, b]))
    return tok.with_params(idf=idf)


# ---------------------------------------------------------------------------------------------
# The plan: the width and the candidate scheme, as the command line makes them.


def plan(
    df,
    col,
    threshold: float,
    *,
    signer: Signer | None = None,
    tokenizer: Tokenizer | None = None,
    recall: float | None = None,
    probes: int | None = None,
) -> tuple[Signer, Tokenizer | None, dict]:
    """The signer, the fitted tokenizer (text) and the join plan (:func:`simlsh.plan_join`)
    that :func:`near_duplicates` uses for ``df``'s column ``col`` at cosine ``threshold``,
    made as ``simlsh dedup --cosine`` makes them: the rows counted, the TF-IDF table fitted
    (:func:`fit_tokenizer`), and without a ``signer`` the width planned for the rows and their
    mean feature count (documents: the library's sample of rows ``0, step, 2*step, ...`` in
    the DataFrame's order; sparse rows: their mean number of entries; dense rows: their
    dimension), signed by the library's default signer at that width and seed. Widths whose
    signatures do not fit their share of the memory available (on the driver) are dropped, as
    the command line and :func:`simlsh.plan_join` drop them: the library's default budget."""
    src, inp = _resolve_input(df, col)
    return _plan(src, inp, threshold, signer, tokenizer, recall, probes)


def _plan(src, inp: _Input, threshold: float, signer, tokenizer, recall, probes=None):
    n = src.count()
    tok = fit_tokenizer(src, inp.cols[0], tokenizer) if inp.kind == "text" else None
    if signer is not None:
        if not isinstance(signer, Signer):
            raise TypeError(f"signer must be a simlsh.Signer, got {type(signer).__name__}")
        return signer, tok, plan_join(threshold, rows=n, bits=signer.bits, recall=recall, probes=probes)
    p = plan_join(threshold, rows=n, features=_mean_features(src, inp, tok, n), recall=recall, probes=probes)
    d = _simlsh.defaults()
    chosen = make_signer(_simlsh.default_signer(inp.kind, p["bits"]), bits=p["bits"], seed=d["seed"])
    return chosen, tok, p


def _mean_features(src, inp: _Input, tok: Tokenizer | None, n: int) -> float:
    """The mean feature count the command line plans the width with."""
    F, _, _ = _spark()
    if inp.kind == "text":
        step = _simlsh.feature_sample_step(n)
        col = inp.cols[0]
        # Rows 0, step, 2*step, ... in the DataFrame's order (partition by partition, as
        # `zipWithIndex` numbers them): each partition's first row number from the counts,
        # then one Arrow pass that keeps the sampled rows (no per-row Python).
        _, T, _ = _spark()
        with_pid = src.select(F.spark_partition_id().alias("pid"), col)
        counts = dict(with_pid.groupBy("pid").count().collect())
        first, start = {}, 0
        for pid in sorted(counts):
            first[pid] = start
            start += counts[pid]

        def pick(batches):
            seen = None
            for b in batches:
                if not b.num_rows:
                    continue
                if seen is None:
                    seen = first[_one_chunk(b.column("pid"))[0].as_py()]
                rows = np.arange(seen, seen + b.num_rows)
                seen += b.num_rows
                keep = np.flatnonzero(rows % step == 0)
                yield pa.RecordBatch.from_arrays([_one_chunk(b.column(col)).take(pa.array(keep))], names=[col])

        schema = T.StructType([T.StructField(col, T.StringType(), True)])
        docs = [r[0] for r in with_pid.mapInArrow(pick, schema).collect()]
        if any(d is None for d in docs):
            raise ValueError("null document (filter or fill nulls first)")
        return _simlsh.mean_features(tok._core, docs) if docs else 0.0
    if inp.kind == "dense":
        first = src.select(F.size(inp.cols[0]).alias("d")).first()
        return float(first["d"]) if first is not None else 0.0
    total = src.select(F.sum(F.size(inp.cols[0])).alias("nnz")).first()["nnz"] or 0
    return float(total) / max(n, 1)


# ---------------------------------------------------------------------------------------------
# near_duplicates


def _ids(batch, name):
    arr = _one_chunk(batch.column(name))
    null = _first_null(arr)
    if null is not None:
        raise ValueError(f"row {null}: null id")
    return arr.cast(pa.int64()).to_numpy(zero_copy_only=False)


def near_duplicates(
    df,
    id_col: str,
    col,
    *,
    threshold: float,
    signer: Signer | None = None,
    tokenizer: Tokenizer | None = None,
    scheme=None,
    radius: int | None = None,
    recall: float | None = None,
    probes: int | None = None,
    verify: bool = True,
    collapse_exact: bool = True,
    partitions: int | None = None,
    return_report: bool = False,
):
    """The pairs of rows of ``df`` whose cosine is at least ``threshold``: a DataFrame
    ``(a, b, distance, cosine)`` (``a < b`` the rows' ``id_col`` values, ``bigint``;
    ``distance`` the Hamming distance of their signatures; ``cosine`` the exact cosine, or
    with ``verify=False`` the estimate ``cos(pi * distance / bits)`` of every candidate).

    **The command line's answer.** At its defaults this is ``simlsh dedup --cosine
    THRESHOLD`` on the same rows: the same tokenizer (TF-IDF fitted on the column), the same
    planned width and signer (:func:`plan`), the same candidate scheme and exact cosines, so
    the same pairs. ``col`` is read as by :func:`signatures`. Rows without features (empty
    text, zero vectors) are never paired. Ids must be unique integers
    (``F.monotonically_increasing_id()`` makes some).

    Candidates come from ``scheme`` (a :class:`simlsh.Scheme` or its text form; ``radius=r``
    for ``Scheme.radius(r)``) or from the plan for ``recall`` at ``threshold`` (``probes``: the
    multi-probe distance the planned banding may use, the library's default when None, as
    ``simlsh dedup --probes``; a probing banding keys each band twice, one half of its bits
    cleared in each copy, so keys one bit apart meet in one partition); a radius runs
    as Manku's permuted tables planned for the rows (:meth:`simlsh.Scheme.keyed`).
    ``verify=False`` keeps every candidate of the estimated Hamming radius, as ``--no-verify``
    (256-bit signatures unless a signer is given). ``collapse_exact`` first groups rows of
    identical content (a 128-bit hash): one representative (the smallest id) takes part in
    the join, and every pair it is in is given to each member of its group, with every pair
    inside the group (distance 0, the cosine of the representative with itself, as the
    command line computes it). ``partitions`` is the shuffle's partition count
    (default ``spark.sql.shuffle.partitions``).

    ``return_report=True`` also returns a dict: ``rows``, ``empty`` (rows without features),
    ``representatives``, ``bits``, ``scheme`` (the text form), ``capped`` (hot keys: ``(group,
    key, rows)``), ``partitions``.

    The candidate stages (sign and key, one shuffle, scan) run when this is called: their
    output is kept by ``localCheckpoint`` for the lazy verification that follows.
    """
    F, T, _ = _spark()
    if radius is not None:
        if scheme is not None:
            raise ValueError("give a scheme or a radius, not both")
        scheme = Scheme.radius(int(radius))
    src, inp = _resolve_input(df, col)
    if verify:
        signer, tok, p = _plan(src, inp, threshold, signer, tokenizer, recall, probes)
        chosen = _scheme(scheme) if scheme is not None else p["scheme"]
    else:
        if signer is None:
            d = _simlsh.defaults()
            signer = make_signer(_simlsh.default_signer(inp.kind, d["cosine_bits"]), bits=d["cosine_bits"], seed=d["seed"])
        tok = fit_tokenizer(src, inp.cols[0], tokenizer) if inp.kind == "text" else None
        chosen = _scheme(scheme) if scheme is not None else Scheme.radius(
            int(_simlsh.max_hamming_for_cosine(np.array([float(threshold)]), np.array([signer.bits], np.uint64))[0])
        )
    bits = signer.bits
    spark = df.sparkSession
    parts = int(partitions or spark.conf.get("spark.sql.shuffle.partitions"))
    feats = [id_col, *inp.cols]
    # A radius becomes the permuted tables planned for the rows (the other schemes ignore it).
    keyed_scheme = chosen.keyed(bits, max(src.count(), 2) if chosen.kind == "radius" else 2)
    scheme_text = str(keyed_scheme)
    groups = keyed_scheme.groups
    words = (bits + 63) // 64
    slots = _slot_values(spark, parts)
    collapse = bool(collapse_exact)

    # 1. One pass, one native call per batch: signatures, the scheme's keys, and one row per
    # document and partition its keys go to (`p`, the value Spark's hash partitioning sends
    # to that partition; `m`, the groups keyed there as a bit mask; the signature as bytes;
    # the content hash when exact copies are collapsed), so a document's signature is
    # shuffled once per partition it meets, not once per group.
    fields = [
        T.StructField("p", T.LongType(), False), T.StructField("m", T.BinaryType(), False),
        T.StructField("id", T.LongType(), False), T.StructField("fp", T.BinaryType(), False),
    ]
    if collapse:
        fields += [T.StructField("h1", T.LongType(), False), T.StructField("h2", T.LongType(), False)]
    key_schema = T.StructType(fields)

    def keys(batches):
        sch = Scheme(scheme_text)
        for b in batches:
            if not b.num_rows:
                continue
            ids = _ids(b, id_col)
            codes, has, (h1, h2) = _features(b, inp, signer, tok)
            keep = np.flatnonzero(has)
            if keep.size:
                yield _slot_rows(
                    sch, np.ascontiguousarray(codes[keep]), ids[keep], slots,
                    (h1[keep], h2[keep]) if collapse else None,
                )

    keyed = src.select(*feats).mapInArrow(keys, key_schema).repartition(parts, "p")

    # 2. The sort-and-scan of each partition (whole (group, key) runs), one native call: the
    # pairs, the runs capped for their size, and, collapsing, the exact copies (each content
    # group once, by the partition of its group-0 key) and counts.
    pair_schema = T.StructType([
        T.StructField("a", T.LongType(), True), T.StructField("b", T.LongType(), True),
        T.StructField("distance", T.IntegerType(), True),
        T.StructField("cg", T.IntegerType(), True), T.StructField("ck", T.LongType(), True),
        T.StructField("cr", T.LongType(), True),
    ])

    def scan(capped=None):
        def run(batches):
            sch = Scheme(scheme_text)
            batches = [b for b in batches if b.num_rows]
            if batches:
                yield from _scan_slot(pa.Table.from_batches(batches), sch, groups, words, collapse, capped)
        return run

    first = keyed.mapInArrow(scan(), pair_schema).localCheckpoint()
    meta = first.where((F.col("distance") < -1) | F.col("cg").isNotNull()).collect()
    capped = [(r.cg, r.ck, r.cr) for r in meta if r.cg is not None]
    with_features = sum(r.a for r in meta if r.distance == _STATS)
    n_reps = sum(r.b for r in meta if r.distance == _STATS)
    n_copies = sum(r.cr for r in meta if r.distance == _STATS)
    cands = first.where(F.col("distance") >= 0).select("a", "b", "distance")
    if capped:
        # A second scan of the keys finds the pairs whose first agreeing group was capped, by
        # their first uncapped group.
        caps = pa.RecordBatch.from_arrays(
            [pa.array([c[0] for c in capped], pa.int32()), pa.array([c[1] for c in capped], pa.int64()),
             pa.array([c[2] for c in capped], pa.int64())],
            names=["g", "key", "rows"],
        )
        missed = keyed.mapInArrow(scan(caps), pair_schema).select("a", "b", "distance")
        cands = cands.unionByName(missed).localCheckpoint()

    # 3. Exact verification, or the estimate from the distance.
    if verify:
        pairs = _verify(cands, src.select(*feats), id_col, inp, signer, tok, threshold, parts)
    else:
        pairs = cands.withColumn("cosine", F.cos(F.lit(math.pi / bits) * F.col("distance")))
    if n_copies:
        # Every member of a representative's group takes its pairs: a pair of two groups
        # becomes every pair of their members, a representative's pair with itself every pair
        # of its members, each once.
        copies = first.where(F.col("distance") == _COPY)
        if n_copies <= _BROADCAST_ROWS:
            copies = F.broadcast(copies)
        ma = copies.select(F.col("a"), F.col("b").alias("x"))
        mb = copies.select(F.col("a").alias("b"), F.col("b").alias("y"))
        pairs = (
            pairs.join(ma, "a", "left").join(mb, "b", "left")
            .select(F.coalesce("x", "a").alias("x"), F.coalesce("y", "b").alias("y"), "a", "b", "distance", "cosine")
            .where((F.col("a") != F.col("b")) | (F.col("x") < F.col("y")))
            .select(F.least("x", "y").alias("a"), F.greatest("x", "y").alias("b"), "distance", "cosine")
        )
    pairs = pairs.select(
        F.col("a").cast("bigint"), F.col("b").cast("bigint"), F.col("distance").cast("int"), F.col("cosine").cast("double")
    )
    if not return_report:
        return pairs
    rows = df.count()
    report = {
        "rows": rows, "empty": rows - with_features, "representatives": n_reps if collapse else with_features,
        "bits": bits, "scheme": scheme_text, "capped": capped, "partitions": parts,
    }
    return pairs, report


#: Marks of the scan's rows that are not pairs (``distance``): an exact copy ``(a: its
#: representative, b: the copy)``, a partition's counts (``a`` rows with features, ``b``
#: representatives, ``cr`` copy rows).
_COPY, _STATS = -1, -2

#: Up to this many rows, the exact copies and the candidates' ids are broadcast to the joins
#: that need them (no shuffle of the documents).
_BROADCAST_ROWS = 2_000_000


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on ``uint64`` (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _slot_values(spark, parts: int) -> np.ndarray:
    """For each partition ``s < parts``, a ``bigint`` value that ``repartition(parts, col)``
    sends to partition ``s`` (Spark's hash partitioning: ``pmod(hash(col), parts)``, the
    Murmur3 hash with seed 42), found by Spark itself, so that rows keyed by their slot's
    value land in their slot whatever Spark's hash is."""
    F, _, _ = _spark()
    found: dict[int, int] = {}
    span = 64 * parts
    lo = 0
    while len(found) < parts:
        got = (
            spark.range(lo, lo + span).select("id", F.expr(f"pmod(hash(id), {parts})").alias("s"))
            .groupBy("s").agg(F.min("id").alias("v")).collect()
        )
        for r in got:
            found.setdefault(int(r.s), int(r.v))
        lo += span
    return np.array([found[s] for s in range(parts)], dtype=np.int64)


def _fixed_binary(a: np.ndarray) -> pa.Array:
    """The rows of a 2-d array as a ``binary`` column of equal-length values (no copy)."""
    raw = np.ascontiguousarray(a).view(np.uint8).reshape(a.shape[0], -1)
    n, k = raw.shape
    offsets = np.arange(0, (n + 1) * k, k, dtype=np.int32 if (n + 1) * k < 2**31 else np.int64)
    t = pa.binary() if offsets.dtype == np.int32 else pa.large_binary()
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(offsets), pa.py_buffer(raw.reshape(-1))])


def _binary_rows(arr, k: int) -> np.ndarray:
    """A ``binary`` column of ``k``-byte values as an ``(n, k)`` ``uint8`` array."""
    arr = _one_chunk(arr)
    n = len(arr)
    _, ob, db = arr.buffers()
    dt = np.dtype(np.int64 if pa.types.is_large_binary(arr.type) else np.int32)
    offsets = np.frombuffer(ob, dtype=dt, count=n + 1, offset=arr.offset * dt.itemsize)
    if n and not np.all(np.diff(offsets) == k):
        raise ValueError(f"binary rows of {k} bytes expected")
    data = np.frombuffer(db, dtype=np.uint8) if db is not None else np.zeros(0, np.uint8)
    return data[offsets[0] : offsets[0] + n * k].reshape(n, k)


def _slot_rows(sch: Scheme, codes: np.ndarray, ids: np.ndarray, slots: np.ndarray, hashes) -> pa.RecordBatch:
    """One row per document and partition its keys go to (see :func:`near_duplicates`)."""
    parts = len(slots)
    keys = sch.keys(codes, threads=1)
    n, groups = keys.shape
    g = np.arange(groups, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    slot = (_mix64(keys ^ g) % np.uint64(parts)).astype(np.int64)
    comb = (np.arange(n, dtype=np.int64)[:, None] * parts + slot).reshape(-1)
    order = np.argsort(comb, kind="stable")
    sc = comb[order]
    head = np.empty(sc.size, dtype=bool)
    head[:1] = True
    np.not_equal(sc[1:], sc[:-1], out=head[1:])
    u = np.cumsum(head) - 1
    member = np.zeros((int(u[-1]) + 1, groups), dtype=bool)
    member[u, order % groups] = True
    heads = sc[head]
    rows, where = heads // parts, heads % parts
    cols = [
        pa.array(slots[where]), _fixed_binary(np.packbits(member, axis=1, bitorder="little")),
        pa.array(ids[rows], pa.int64()), _fixed_binary(codes[rows]),
    ]
    names = ["p", "m", "id", "fp"]
    if hashes is not None:
        cols += [pa.array(hashes[0][rows].view(np.int64)), pa.array(hashes[1][rows].view(np.int64))]
        names += ["h1", "h2"]
    return pa.RecordBatch.from_arrays(cols, names=names)


def _scan_slot(t: pa.Table, sch: Scheme, groups: int, words: int, collapse: bool, capped):
    """The batches a partition of :func:`_slot_rows` rows gives: its pairs (the library's
    ``join::partition``), capped runs, and (first pass) exact copies and counts."""
    ids = _one_chunk(t.column("id")).to_numpy(zero_copy_only=False)
    member = np.unpackbits(
        _binary_rows(t.column("m"), (groups + 7) // 8), axis=1, count=groups, bitorder="little"
    ).view(bool)
    codes = _binary_rows(t.column("fp"), 8 * words)
    n = len(ids)
    keep = np.ones(n, dtype=bool)
    extra_a: list[np.ndarray] = []
    extra_b: list[np.ndarray] = []
    extra_d: list[np.ndarray] = []
    with_features = int(member[:, 0].sum())
    reps, copies = with_features, 0
    if collapse and n:
        # Exact copies have one signature, hence one partition per group: each partition sees
        # every copy of its rows' contents, and keeps one representative (the smallest id).
        h1 = _one_chunk(t.column("h1")).to_numpy(zero_copy_only=False)
        h2 = _one_chunk(t.column("h2")).to_numpy(zero_copy_only=False)
        o = np.lexsort((ids, h2, h1))
        new = np.empty(n, dtype=bool)
        new[:1] = True
        new[1:] = (h1[o][1:] != h1[o][:-1]) | (h2[o][1:] != h2[o][:-1])
        grp = np.cumsum(new) - 1
        size = np.bincount(grp)[grp]
        rep_sorted = ids[o][new][grp]
        keep[o] = ids[o] == rep_sorted
        # Each group once: by the partition of its group-0 key. Its copy rows (every member,
        # the representative included) and the representative's pair with itself.
        here = (size > 1) & member[o, 0]
        if capped is None and here.any():
            extra_a.append(rep_sorted[here])
            extra_b.append(ids[o][here])
            extra_d.append(np.full(int(here.sum()), _COPY, np.int32))
            selfs = here & (ids[o] == rep_sorted)
            extra_a.append(rep_sorted[selfs])
            extra_b.append(rep_sorted[selfs])
            extra_d.append(np.zeros(int(selfs.sum()), np.int32))
            copies = int(here.sum())
        reps = int((keep & member[:, 0]).sum())
    r, g = np.nonzero(member[keep])
    kid = ids[keep][r]
    kcodes = np.ascontiguousarray(codes[keep][r]).view(np.uint64)
    cg = ck = None
    if capped is not None and capped.num_rows:
        cg = np.ascontiguousarray(capped.column("g").to_numpy(zero_copy_only=False), dtype=np.int32)
        ck = np.ascontiguousarray(capped.column("key").to_numpy(zero_copy_only=False)).view(np.uint64)
    a, b, d, kg, kk, kr = sch.partition(
        g.astype(np.int32), np.ascontiguousarray(kid).view(np.uint64), kcodes,
        capped_group=cg, capped_key=ck, missed=capped is not None,
    )
    nulls = pa.nulls
    pa_ = np.concatenate([a.view(np.int64), *extra_a]) if extra_a else a.view(np.int64)
    pb_ = np.concatenate([b.view(np.int64), *extra_b]) if extra_b else b.view(np.int64)
    pd_ = np.concatenate([d.astype(np.int32), *extra_d]) if extra_d else d.astype(np.int32)
    m = len(pa_)
    yield pa.RecordBatch.from_arrays(
        [pa.array(pa_), pa.array(pb_), pa.array(pd_, pa.int32()), nulls(m, pa.int32()), nulls(m, pa.int64()),
         nulls(m, pa.int64())],
        names=["a", "b", "distance", "cg", "ck", "cr"],
    )
    if capped is None:
        k = len(kg)
        if k:
            yield pa.RecordBatch.from_arrays(
                [nulls(k, pa.int64()), nulls(k, pa.int64()), nulls(k, pa.int32()), pa.array(kg, pa.int32()),
                 pa.array(kk.view(np.int64)), pa.array(kr, pa.int64())],
                names=["a", "b", "distance", "cg", "ck", "cr"],
            )
        yield pa.RecordBatch.from_arrays(
            [pa.array([with_features], pa.int64()), pa.array([reps], pa.int64()), pa.array([_STATS], pa.int32()),
             nulls(1, pa.int32()), nulls(1, pa.int64()), pa.array([copies], pa.int64())],
            names=["a", "b", "distance", "cg", "ck", "cr"],
        )


def _disk():
    from pyspark import StorageLevel

    return StorageLevel.MEMORY_AND_DISK


def _verify(cands, docs, id_col, inp: _Input, signer: Signer, tok: Tokenizer, threshold: float, parts: int):
    """The candidates with their exact cosines, those at least ``threshold`` kept: two joins
    bring each pair's rows together, one native call per batch computes the cosines."""
    F, T, _ = _spark()
    # The candidates' rows only: their ids broadcast to a filter of the documents, so that
    # the joins shuffle those rows, not every document.
    n = cands.count()
    if n <= _BROADCAST_ROWS // 2:
        need = cands.select(F.col("a").alias(id_col)).unionByName(cands.select(F.col("b").alias(id_col))).distinct()
        docs = docs.join(F.broadcast(need), id_col, "left_semi")
    left = docs.select([F.col(id_col).alias("a")] + [F.col(c).alias(f"a_{i}") for i, c in enumerate(inp.cols)])
    right = docs.select([F.col(id_col).alias("b")] + [F.col(c).alias(f"b_{i}") for i, c in enumerate(inp.cols)])
    joined = cands.join(left, "a").join(right, "b")
    schema = T.StructType([
        T.StructField("a", T.LongType(), True), T.StructField("b", T.LongType(), True),
        T.StructField("distance", T.IntegerType(), True), T.StructField("cosine", T.DoubleType(), True),
    ])
    k = len(inp.cols)
    dim = signer.dim

    def cosines(batches):
        for bt in batches:
            if not bt.num_rows:
                continue
            side = lambda p: _Input(inp.kind, tuple(f"{p}_{i}" for i in range(k)))  # noqa: E731
            if inp.kind == "text":
                ao, ad = _texts(bt, side("a"))
                bo, bd = _texts(bt, side("b"))
                c = _simlsh.cosines_text(tok._core, ao, ad, bo, bd, threads=1)
            elif inp.kind == "dense":
                xa = np.ascontiguousarray(_dense_values(_one_chunk(bt.column("a_0"))), dtype=np.float32)
                xb = np.ascontiguousarray(_dense_values(_one_chunk(bt.column("b_0"))), dtype=np.float32)
                c = _simlsh.cosines(xa, xb, threads=1)
            else:
                pa_, ia, va = _csr(bt, side("a"))
                pb, ib, vb = _csr(bt, side("b"))
                cols = dim if dim is not None else int(max(ia.max(initial=0), ib.max(initial=0))) + 1
                c = _simlsh.cosines((pa_, ia, va, cols), (pb, ib, vb, cols), threads=1)
            keep = np.flatnonzero(c >= threshold)
            yield pa.RecordBatch.from_arrays(
                [_one_chunk(bt.column("a")).take(pa.array(keep)), _one_chunk(bt.column("b")).take(pa.array(keep)),
                 _one_chunk(bt.column("distance")).take(pa.array(keep)), pa.array(c[keep])],
                names=["a", "b", "distance", "cosine"],
            )

    return joined.mapInArrow(cosines, schema)


# ---------------------------------------------------------------------------------------------
# clusters


def clusters(pairs, *, ids=None, max_driver_edges: int = MAX_DRIVER_EDGES, max_iterations: int = 100):
    """Connected components of the graph of ``pairs`` (columns ``a``, ``b``): a DataFrame
    ``(id, cluster)`` for every id of an edge (and of ``ids``, a DataFrame whose first column
    holds ids, singletons included), ``cluster`` the smallest id of its component.

    Up to ``max_driver_edges`` edges, they are collected to the driver (16 bytes an edge) and
    labelled by the library's union-find; beyond, large-star/small-star iterations (Kiveris
    et al. 2014) run in the DataFrame API, each a few shuffles of the edges, until no label
    changes (at most ``max_iterations``, ``O(log n)`` in practice)."""
    F, T, _ = _spark()
    spark = pairs.sparkSession
    edges = pairs.select(F.col("a").cast("bigint").alias("a"), F.col("b").cast("bigint").alias("b"))
    extra = ids.select(F.col(ids.columns[0]).cast("bigint").alias("id")) if ids is not None else None
    n = edges.count() if max_driver_edges is not None else None
    schema = T.StructType([T.StructField("id", T.LongType(), True), T.StructField("cluster", T.LongType(), True)])
    if n is not None and n <= max_driver_edges:
        from .arrow import clusters as arrow_clusters

        tbl = edges.toArrow()
        extra_ids = extra.toArrow().column("id").to_numpy() if extra is not None else None
        lab = arrow_clusters(tbl, ids=extra_ids)
        out = pa.table({"id": lab.column("id"), "cluster": lab.column("root")})
        return _arrow_df(spark, out, schema)
    return _star_components(edges, extra, max_iterations)


def _arrow_df(spark, table: pa.Table, schema):
    try:
        return spark.createDataFrame(table, schema)  # Spark >= 4: pyarrow tables directly
    except TypeError:  # pragma: no cover - older PySpark
        return spark.createDataFrame(table.to_pandas(), schema)


def _star_components(edges, extra, max_iterations: int):
    """Large-star / small-star connected components in the DataFrame API."""
    F, _, _ = _spark()
    # Symmetric, loop-free, deduplicated edges (u, v).
    e = edges.where(F.col("a") != F.col("b"))
    e = e.select(F.least("a", "b").alias("u"), F.greatest("a", "b").alias("v")).distinct()
    for _ in range(max_iterations):
        # Large star: each node u links its larger neighbours to its smallest neighbour m(u).
        sym = e.select("u", "v").unionByName(e.select(F.col("v").alias("u"), F.col("u").alias("v")))
        m = sym.groupBy("u").agg(F.least(F.min("v"), F.first("u")).alias("m"))
        large = (
            sym.join(m, "u").where(F.col("v") > F.col("u"))
            .select(F.col("v").alias("u"), F.col("m").alias("v"))
        )
        large = large.select(F.least("u", "v").alias("u"), F.greatest("u", "v").alias("v")).where(F.col("u") != F.col("v")).distinct()
        # Small star: each node v links itself and its smaller neighbours to the smallest one.
        m2 = large.groupBy("v").agg(F.min("u").alias("m"))
        small = large.join(m2, "v").select(F.col("m").alias("u"), F.col("u").alias("v"))
        small = small.unionByName(m2.select(F.col("m").alias("u"), F.col("v")))
        small = small.select(F.least("u", "v").alias("u"), F.greatest("u", "v").alias("v")).where(F.col("u") != F.col("v")).distinct()
        small = small.localCheckpoint()
        changed = small.exceptAll(e).limit(1).count() + e.exceptAll(small).limit(1).count()
        e = small
        if changed == 0:
            break
    else:
        raise RuntimeError(f"connected components did not converge in {max_iterations} iterations")
    # Converged: every component is a star around its smallest node.
    labels = e.select(F.col("v").alias("id"), F.col("u").alias("cluster"))
    roots = e.select(F.col("u").alias("id"), F.col("u").alias("cluster"))
    out = labels.unionByName(roots).distinct()
    if extra is not None:
        single = extra.join(out, "id", "left_anti").select("id", F.col("id").alias("cluster"))
        out = out.unionByName(single).distinct()
    return out

