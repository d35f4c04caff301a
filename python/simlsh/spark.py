"""Near-duplicate detection on Apache Spark: DataFrame in, DataFrame out.

Install with the ``spark`` extra (``pip install "simlsh[spark]"``: PySpark 4, pyarrow; Java
17 on every machine). The package must be importable by the executors' Python
(``PYSPARK_PYTHON``); nothing else is shipped: signers and tokenizers travel as their
parameters and are rebuilt on each executor (a Gaussian matrix is regenerated from its seed,
never broadcast).

Three steps, each a DataFrame function:

- :func:`signatures` signs a text column (``string``), a sparse one (a Spark ML ``Vector``
  column, a ``struct<indices, values>``, or two list columns ``(indices, values)``) or a dense
  one (``array<float>``/``array<double>``, or a dense Spark ML vector) with ``mapInArrow``,
  one native call per Arrow batch. Signatures are ``bigint`` (``f <= 64``) or
  ``array<bigint>`` (one entry per 64-bit word): **Spark has no unsigned 64-bit type**, so a
  word travels as its bit pattern (``fp & 0xFFFF_FFFF_FFFF_FFFF`` in Python, ``uint64`` in
  NumPy/Arrow readers gives the word back).
- :func:`near_duplicates` pairs the rows of a DataFrame whose cosine is at least a threshold:
  exact duplicates collapsed first (one shuffle on a 128-bit content hash), then for each
  remaining row one ``(group, key)`` row per band (a banding of wide signatures) or per
  permuted table (Manku et al.'s tables for a Hamming radius), **one shuffle on the key**, and
  a native sort-and-scan of each partition (one call per partition, never per row or group)
  that reports each pair once, by the first group its signatures agree on, so that no
  ``distinct()`` is needed; candidates are then verified by their exact cosine (two joins back
  to the input) unless ``verify=False``. Runs of more than ``max_group`` rows under one key
  (hot keys) are skipped and their pairs looked for in the other groups (a second scan of the
  keys, only when some run was capped).
- :func:`clusters` labels connected components of the pairs: Rust union-find on the driver
  when the edges fit (``max_driver_edges``, 16 bytes an edge on the driver: the default 50
  million edges is 800 MB), else large-star/small-star iterations in the DataFrame API.

The answers equal the in-process library's for the same parameters, whatever the number of
partitions or executors: :func:`simlsh.banded_join` or :func:`simlsh.self_join` for the
candidates, the verified join's cosines for the pairs.
"""

from __future__ import annotations

import math
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from . import _simlsh
from .arrow import _dense_values, _first_null, _string_buffers, codes_from_arrow, codes_to_arrow
from .signers import HashedGaussian, Signer
from .text import Tokenizer

__all__ = ["signatures", "near_duplicates", "clusters", "key_scheme", "MAX_DRIVER_EDGES"]

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
    """A batch's sparse rows as CSR arrays (``int64`` indptr and indices, ``float32`` data)."""
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
    return io - io[0], ind, val


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
    bit, to :meth:`simlsh.Signer.sign` of the same rows.

    ``col`` names a ``string`` column (documents, tokenised by ``tokenizer``, default
    ``Tokenizer()``), an ``array<float>``/``array<double>`` column (dense rows of one length),
    a Spark ML vector column or a ``struct<indices, values>`` column (sparse rows), or is a
    pair ``(indices, values)`` of array columns. ``signer`` defaults to
    ``HashedGaussian(bits=64)`` (the command line's default); it is sent to the executors as its parameters. Nulls fail the
    job with a ``ValueError`` naming the row of the batch.
    """
    F, T, _ = _spark()
    signer = signer if signer is not None else HashedGaussian(bits=64)
    tok = tokenizer if tokenizer is not None else Tokenizer()
    if not isinstance(signer, Signer):
        raise TypeError(f"signer must be a simlsh.Signer, got {type(signer).__name__}")
    if out_col in df.columns:
        raise ValueError(f"column `{out_col}` exists already")
    src, inp = _resolve_input(df, col)
    helpers = [c for c in src.columns if c.startswith("__simlsh_")]
    schema = T.StructType(src.schema.fields + [T.StructField(out_col, _fp_type(signer.bits), True)])

    def sign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            codes, _, _ = _features(b, inp, signer, tok) if b.num_rows else (np.zeros((0, signer.words), np.uint64), None, None)
            yield pa.RecordBatch.from_arrays([*b.columns, codes_to_arrow(codes)], names=[*b.schema.names, out_col])

    out = src.mapInArrow(sign, schema)
    return out.drop(*helpers) if helpers else out


# ---------------------------------------------------------------------------------------------
# The key scheme: bands or permuted tables.


def key_scheme(
    threshold: float,
    *,
    bits: int,
    rows: int,
    recall: float = 0.99,
    radius: int | None = None,
    bands: int | None = None,
    width: int | None = None,
    max_distance: int | None = None,
    max_group: int | None = None,
) -> _simlsh.KeyScheme:
    """The candidate scheme of a distributed join: permuted tables for ``radius`` (Manku's
    design for ``rows`` rows), a banding (``bands`` x ``width`` bits, ``max_distance``), or,
    with neither, the one the single-machine verified join plans for ``threshold`` and
    ``recall`` at ``bits`` bits and ``rows`` rows."""
    if radius is not None and bands is not None:
        raise ValueError("give a radius (permuted tables) or bands (a banding), not both")
    prefix = (None, None)
    if radius is None and bands is None:
        plan = _simlsh.plan_join(float(threshold), float(recall), int(bits), int(max(rows, 2)))
        if plan["kind"] == "hamming":
            radius = plan["radius"]
        else:
            bands, width, max_distance = plan["bands"], plan["width"], plan["max_distance"]
            prefix = (plan["prefix_words"], plan["prefix_radius"])
    if radius is not None:
        return _simlsh.KeyScheme.tables(int(bits), int(radius), rows=int(max(rows, 2)), max_group=max_group)
    if width is None:
        raise ValueError("bands need a width (bits per band)")
    return _simlsh.KeyScheme.bands(int(bits), int(bands), int(width), max_distance, max_group, *prefix)


# ---------------------------------------------------------------------------------------------
# near_duplicates


def _ids(batch, name):
    arr = _one_chunk(batch.column(name))
    null = _first_null(arr)
    if null is not None:
        raise ValueError(f"row {null}: null id")
    return arr.cast(pa.int64()).to_numpy(zero_copy_only=False)


def _cat(xs, dtype):
    return np.concatenate(xs) if xs else np.zeros(0, dtype)


def near_duplicates(
    df,
    id_col: str,
    col,
    *,
    threshold: float = 0.9,
    signer: Signer | None = None,
    tokenizer: Tokenizer | None = None,
    recall: float = 0.99,
    radius: int | None = None,
    bands: int | None = None,
    width: int | None = None,
    max_distance: int | None = None,
    max_group: int | None = None,
    verify: bool = True,
    collapse_exact: bool = True,
    partitions: int | None = None,
    return_report: bool = False,
):
    """The pairs of rows of ``df`` whose cosine is at least ``threshold``: a DataFrame
    ``(a, b, distance, cosine)`` (``a < b`` the rows' ``id_col`` values, ``bigint``;
    ``distance`` the Hamming distance of their signatures; ``cosine`` the exact cosine, or
    with ``verify=False`` the estimate ``cos(pi * distance / bits)`` of every candidate).

    ``col`` is read as by :func:`signatures`; ``signer`` defaults to ``HashedGaussian(bits=256)``
    for text and sparse rows (dense rows need a :class:`simlsh.HyperplaneSigner` of their
    dimension). Rows without features (empty text, zero vectors) are never paired. Ids must be
    unique integers (``F.monotonically_increasing_id()`` makes some).

    Candidates come from Manku's permuted tables for ``radius``, a banding (``bands``,
    ``width``, ``max_distance``), or by default the single-machine planner's choice for
    ``recall`` at ``threshold`` (:func:`key_scheme`). ``collapse_exact`` first groups rows of
    identical content (a 128-bit hash): one representative (the smallest id) takes part in
    the join, the others are paired with it at distance 0 and cosine 1. ``max_group`` caps
    hot keys (see the module). ``partitions`` is the shuffle's partition count (default
    ``spark.sql.shuffle.partitions``).

    ``return_report=True`` also returns a dict: ``rows``, ``empty`` (rows without features),
    ``representatives``, ``scheme`` (:meth:`KeyScheme.describe`), ``capped`` (hot keys:
    ``(group, key, rows)``), ``partitions``.

    The signing and exact-duplicate stages run when this is called (their row count sizes the
    table design) and stay persisted, memory and disk, for the lazy stages that follow (free
    them with ``spark.catalog.clearCache()`` once the pairs are written).
    """
    F, T, _ = _spark()
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    src, inp = _resolve_input(df, col)
    if signer is None:
        if inp.kind == "dense":
            raise ValueError("dense rows need a signer of their dimension: HyperplaneSigner(dim=..., bits=...)")
        signer = HashedGaussian(bits=256)
    tok = tokenizer if tokenizer is not None else Tokenizer()
    bits = signer.bits
    spark = df.sparkSession
    parts = int(partitions or spark.conf.get("spark.sql.shuffle.partitions"))
    feats = [id_col, *inp.cols]
    fp_t = _fp_type(bits)

    # 1. Signatures, "has features", content hashes: one pass, one native call per batch.
    sig_schema = T.StructType([
        T.StructField("id", T.LongType(), True), T.StructField("fp", fp_t, True),
        T.StructField("h1", T.LongType(), True), T.StructField("h2", T.LongType(), True),
    ])

    def sign(batches):
        for b in batches:
            if not b.num_rows:
                continue
            ids = _ids(b, id_col)
            codes, has, (h1, h2) = _features(b, inp, signer, tok)
            keep = np.flatnonzero(has)
            yield pa.RecordBatch.from_arrays(
                [pa.array(ids[keep]), codes_to_arrow(np.ascontiguousarray(codes[keep])),
                 pa.array(h1[keep].view(np.int64)), pa.array(h2[keep].view(np.int64))],
                names=["id", "fp", "h1", "h2"],
            )

    sigs = src.select(*feats).mapInArrow(sign, sig_schema)

    # 2. Exact duplicates: one representative (the smallest id) per content hash.
    if collapse_exact:
        groups = sigs.groupBy("h1", "h2").agg(
            F.min("id").alias("id"), F.first("fp").alias("fp"), F.collect_list("id").alias("members"),
        ).persist(_disk())
        reps = groups.select("id", "fp")
        dup = (
            groups.where(F.size("members") > 1)
            .select(F.col("id").alias("rep"), F.explode("members").alias("m"))
            .where(F.col("m") != F.col("rep"))
            .select(
                F.least("rep", "m").alias("a"), F.greatest("rep", "m").alias("b"),
                F.lit(0).alias("distance"), F.lit(1.0).alias("cosine"),
            )
        )
    else:
        groups, reps, dup = None, sigs.select("id", "fp").persist(_disk()), None

    n_rows = reps.count()
    scheme = key_scheme(
        threshold, bits=bits, rows=n_rows, recall=recall, radius=radius, bands=bands, width=width,
        max_distance=max_distance, max_group=max_group,
    )
    desc = scheme.describe()
    groups_n = desc["groups"]
    scheme_args = _scheme_args(desc)

    # 3. One (group, key) row per band/table of each representative.
    key_schema = T.StructType([
        T.StructField("g", T.IntegerType(), True), T.StructField("key", T.LongType(), True),
        T.StructField("id", T.LongType(), True), T.StructField("fp", fp_t, True),
    ])

    def keys(batches):
        sch = _scheme(scheme_args)
        for b in batches:
            if not b.num_rows:
                continue
            codes = codes_from_arrow(b.column("fp"), bits)
            g, k = sch.keys(codes, threads=1)
            rows = np.repeat(np.arange(b.num_rows), groups_n)
            yield pa.RecordBatch.from_arrays(
                [pa.array(g), pa.array(k.view(np.int64)), b.column("id").take(pa.array(rows)), b.column("fp").take(pa.array(rows))],
                names=["g", "key", "id", "fp"],
            )

    keyed = reps.mapInArrow(keys, key_schema).repartition(parts, "g", "key").drop("key")

    # 4. The sort-and-scan of each partition: pairs, and the runs capped for their size.
    pair_schema = T.StructType([
        T.StructField("a", T.LongType(), True), T.StructField("b", T.LongType(), True),
        T.StructField("distance", T.IntegerType(), True),
        T.StructField("cg", T.IntegerType(), True), T.StructField("ck", T.LongType(), True),
        T.StructField("cr", T.LongType(), True),
    ])

    def scan(capped_g=None, capped_k=None):
        def run(batches):
            sch = _scheme(scheme_args)
            batches = [b for b in batches if b.num_rows]
            if not batches:
                return
            t = pa.Table.from_batches(batches)
            g = t.column("g").to_numpy().astype(np.int32)
            ids = t.column("id").to_numpy().view(np.uint64)
            codes = codes_from_arrow(t.column("fp"), bits)
            missed = capped_g is not None
            a, b, d, cg, ck, cr = sch.partition(
                g, ids, np.ascontiguousarray(codes),
                capped_group=capped_g, capped_key=capped_k, missed_only=missed,
            )
            nulls = lambda n, t: pa.nulls(n, t)  # noqa: E731
            yield pa.RecordBatch.from_arrays(
                [pa.array(a.view(np.int64)), pa.array(b.view(np.int64)), pa.array(d),
                 nulls(len(a), pa.int32()), nulls(len(a), pa.int64()), nulls(len(a), pa.int64())],
                names=["a", "b", "distance", "cg", "ck", "cr"],
            )
            if len(cg) and not missed:
                m = len(cg)
                yield pa.RecordBatch.from_arrays(
                    [nulls(m, pa.int64()), nulls(m, pa.int64()), nulls(m, pa.int32()),
                     pa.array(cg), pa.array(ck.view(np.int64)), pa.array(cr)],
                    names=["a", "b", "distance", "cg", "ck", "cr"],
                )
        return run

    capped: list[tuple[int, int, int]] = []
    if desc.get("max_group") is None:
        cands = keyed.mapInArrow(scan(), pair_schema).select("a", "b", "distance")
    else:
        # Hot keys: the first scan lists the capped runs; a second scan of the keys finds the
        # pairs whose first agreeing group was capped, by their first uncapped group.
        first = keyed.mapInArrow(scan(), pair_schema).localCheckpoint()
        capped = [(r.cg, r.ck, r.cr) for r in first.where(F.col("cg").isNotNull()).select("cg", "ck", "cr").collect()]
        cands = first.where(F.col("a").isNotNull()).select("a", "b", "distance")
        if capped:
            cg = np.array([c[0] for c in capped], dtype=np.int32)
            ck = np.array([c[1] for c in capped], dtype=np.int64).view(np.uint64)
            missed = keyed.mapInArrow(scan(cg, ck), pair_schema).select("a", "b", "distance")
            cands = cands.unionByName(missed)

    # 5. Exact verification, or the estimate from the distance.
    if verify:
        pairs = _verify(cands, src.select(*feats), id_col, inp, signer, tok, threshold, parts)
    else:
        pairs = cands.withColumn("cosine", F.cos(F.lit(math.pi / bits) * F.col("distance")))
    if dup is not None:
        pairs = pairs.unionByName(dup)
    pairs = pairs.select(
        F.col("a").cast("bigint"), F.col("b").cast("bigint"), F.col("distance").cast("int"), F.col("cosine").cast("double")
    )
    if not return_report:
        return pairs
    report = {
        "rows": None, "empty": None, "representatives": n_rows, "scheme": desc,
        "capped": capped, "partitions": parts,
    }
    report["rows"] = df.count()
    with_features = (
        groups.agg(F.sum(F.size("members"))).first()[0] or 0 if collapse_exact else n_rows
    )
    report["empty"] = report["rows"] - int(with_features)
    return pairs, report


def _disk():
    from pyspark import StorageLevel

    return StorageLevel.MEMORY_AND_DISK


def _scheme_args(desc: dict) -> tuple:
    if desc["kind"] == "bands":
        return ("bands", desc["bits"], desc["bands"], desc["width"], desc["max_distance"], desc["max_group"],
                desc["prefix_words"], desc["prefix_radius"])
    return ("tables", desc["bits"], desc["radius"], desc["levels"], desc["max_group"])


def _scheme(args: tuple) -> _simlsh.KeyScheme:
    """A key scheme rebuilt from its parameters (on an executor)."""
    if args[0] == "bands":
        _, bits, bands, width, md, mg, pw, pr = args
        return _simlsh.KeyScheme.bands(bits, bands, width, md, mg, pw, pr)
    _, bits, radius, levels, mg = args
    return _simlsh.KeyScheme.tables(bits, radius, levels=list(levels), max_group=mg)


def _verify(cands, docs, id_col, inp: _Input, signer: Signer, tok: Tokenizer, threshold: float, parts: int):
    """The candidates with their exact cosines, those at least ``threshold`` kept: two joins
    bring each pair's rows together, one native call per batch computes the cosines."""
    F, T, _ = _spark()
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
                c = _simlsh.cosines_dense(xa, xb)
            else:
                pa_, ia, va = _csr(bt, side("a"))
                pb, ib, vb = _csr(bt, side("b"))
                cols = dim if dim is not None else int(max(ia.max(initial=0), ib.max(initial=0))) + 1
                c = _simlsh.cosines_csr(pa_, ia, va, pb, ib, vb, cols)
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
    for it in range(max_iterations):
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

