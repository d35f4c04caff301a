"""Arrow in and out: signing Arrow columns without copies, and batch functions
(``RecordBatch`` in, ``RecordBatch`` out) that an engine calls once per partition, with no
per-row Python (Spark's ``mapInArrow``, Ray Data's ``map_batches``, Dask's
``map_partitions``).

Columns are read through their buffers: a ``string``/``large_string`` column's offsets and
UTF-8 bytes, a ``fixed_size_list<float>`` or ``list<float>`` column's values, are handed to the
native code as NumPy views, never copied. Anything exposing ``__arrow_c_array__`` (polars,
arro3, nanoarrow) is taken through ``pyarrow.array``.

Signatures travel as ``int64`` (the ``uint64`` bit pattern: Spark, Java and most Parquet
readers have no unsigned 64-bit type) for codes of at most 64 bits, and as ``list<int64>``
(one entry per word) for wider codes.

>>> import pyarrow as pa, simlsh
>>> from simlsh import arrow
>>> batch = pa.record_batch({"id": [10, 11, 12], "text": ["a b c", "a b c!", "x y z"]})
>>> sigs = arrow.signatures(batch, "text", simlsh.HashingTrick(bits=64, seed=1))
>>> sigs.schema.names, sigs.column("fp").type
(['id', 'fp'], DataType(int64))
>>> pairs = arrow.self_join(sigs, radius=3)
>>> pairs.to_pylist()
[{'a': 10, 'b': 11, 'distance': 0}]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from . import _simlsh
from ._codes import as_codes, shift_rows
from .text import Idf, Tokenizer, _merge_idf

__all__ = [
    "sign_arrow", "signatures", "codes_from_arrow", "codes_to_arrow", "self_join", "clusters",
    "scheme_keys", "scheme_pairs",
]


def _as_arrow(obj: Any) -> pa.Array | pa.ChunkedArray:
    if isinstance(obj, (pa.Array, pa.ChunkedArray)):
        return obj
    if hasattr(obj, "__arrow_c_array__"):
        return pa.array(obj)
    if hasattr(obj, "__arrow_c_stream__"):
        return pa.chunked_array(obj)
    raise TypeError(f"expected a pyarrow array, got {type(obj).__name__}")


def _chunks(arr: pa.Array | pa.ChunkedArray):
    """``(row offset, chunk)`` pairs."""
    if isinstance(arr, pa.ChunkedArray):
        lo = 0
        for c in arr.chunks:
            yield lo, c
            lo += len(c)
    else:
        yield 0, arr


def _first_null(arr: pa.Array) -> int | None:
    if arr.null_count == 0:
        return None
    return int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])


def _string_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (``int32`` or ``int64``, ``len + 1``) and UTF-8 bytes of a string column, as
    NumPy views of its buffers."""
    null = _first_null(arr)
    if null is not None:
        raise ValueError(f"row {null}: null document (filter or fill nulls first)")
    _, offsets_buf, data_buf = arr.buffers()
    dt = np.dtype(np.int32 if pa.types.is_string(arr.type) else np.int64)
    offsets = np.frombuffer(offsets_buf, dtype=dt, count=len(arr) + 1, offset=arr.offset * dt.itemsize)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return offsets, data


def _dense_values(arr: pa.Array) -> np.ndarray:
    """A list or fixed-size-list column of floats as an ``(N, D)`` NumPy view of its values."""
    null = _first_null(arr)
    if null is not None:
        raise ValueError(f"row {null}: null vector")
    n = len(arr)
    if pa.types.is_fixed_size_list(arr.type):
        d = arr.type.list_size
    else:
        lengths = np.diff(arr.offsets.to_numpy(zero_copy_only=False)) if n else np.zeros(0, np.int64)
        d = int(lengths[0]) if n else 0
        bad = np.flatnonzero(lengths != d)
        if bad.size:
            r = int(bad[0])
            raise ValueError(f"ragged rows: row {r} has {lengths[r]} values, row 0 has {d}")
    values = arr.flatten()
    vnull = _first_null(values)
    if vnull is not None:
        raise ValueError(f"row {vnull // max(d, 1)}, column {vnull % max(d, 1)}: null value")
    if not (pa.types.is_float32(values.type) or pa.types.is_float64(values.type)):
        raise TypeError(f"vectors must hold float32 or float64, got {values.type}")
    return values.to_numpy(zero_copy_only=True).reshape(n, d)


def _core(signer) -> _simlsh.Signer:
    return signer if isinstance(signer, _simlsh.Signer) else signer._core


def sign_arrow(signer, array, *, tokenizer: Tokenizer | None = None, threads: int | None = None) -> np.ndarray:
    """Signs an Arrow column: ``string``/``large_string`` (documents, tokenised by
    ``tokenizer``, default ``Tokenizer()``; ``string_view`` is cast), ``fixed_size_list`` or
    ``list``/``large_list`` of ``float32``/``float64`` (dense vectors, equal lengths),
    ``list<string>`` (token lists). Returns ``(N, words)`` ``uint64``; same bits as
    :meth:`simlsh.Signer.sign` on the same data. Nulls raise ``ValueError`` naming the row.

    An unfitted TF-IDF tokenizer (the default) is fitted on this column's documents, as
    :meth:`simlsh.Signer.sign` does: in a per-batch call of an engine, fit it on the whole
    corpus first (:meth:`simlsh.Tokenizer.fit`, :func:`simlsh.spark.fit_tokenizer`), or each
    batch gets weights of its own."""
    core = _core(signer)
    arr = _as_arrow(array)
    words = (core.bits + 63) // 64
    tok = _fitted(tokenizer if tokenizer is not None else Tokenizer(), arr)
    out = np.empty((len(arr), words), dtype=np.uint64)
    for lo, chunk in _chunks(arr):
        if len(chunk) == 0:
            continue
        t = chunk.type
        try:
            if pa.types.is_string_view(t):
                chunk = chunk.cast(pa.large_string())
                t = chunk.type
            if pa.types.is_string(t) or pa.types.is_large_string(t):
                offsets, data = _string_buffers(chunk)
                sigs = core.sign_arrow_strings(offsets, data, tok._core, threads=threads)
            elif (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)) and (
                pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)
            ):
                null = _first_null(chunk)
                if null is not None:
                    raise ValueError(f"row {null}: null token list")
                docs = chunk.to_pylist()
                for r, d in enumerate(docs):
                    if any(x is None for x in d):
                        raise ValueError(f"row {r}: null token")
                sigs = core.sign_tokens(docs, None, threads=threads)
            elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
                x = _dense_values(chunk)
                sigs = (core.sign_dense_f32 if x.dtype == np.float32 else core.sign_dense_f64)(x, threads=threads)
            else:
                raise TypeError(
                    f"cannot sign an Arrow column of type {t}: expected strings, lists of floats "
                    "or lists of strings"
                )
        except (ValueError, TypeError) as e:
            raise shift_rows(e, lo) from None
        out[lo : lo + len(chunk)] = sigs
    return out


def _fitted(tok: Tokenizer, arr) -> Tokenizer:
    """``tok``, its TF-IDF table fitted on the documents of ``arr`` when it has none."""
    if tok.is_fitted:
        return tok
    tables = []
    for lo, chunk in _chunks(arr):
        if pa.types.is_string_view(chunk.type):
            chunk = chunk.cast(pa.large_string())
        if not (pa.types.is_string(chunk.type) or pa.types.is_large_string(chunk.type)):
            return tok  # not documents: the tokenizer plays no part
        try:
            offsets, data = _string_buffers(chunk)
        except ValueError as e:
            raise shift_rows(e, lo) from None
        tables.append(Idf(_simlsh.Idf.fit_arrow(tok._core, offsets, data)))
    if not tables:
        return tok.fit([])
    return tok.with_params(idf=_merge_idf(tables))


def codes_to_arrow(codes: np.ndarray) -> pa.Array:
    """Codes ``(N, words)`` ``uint64`` as an Arrow column: ``int64`` (the bit pattern) for one
    word, ``list<int64>`` for more (views of the NumPy data, no copy)."""
    codes, _ = as_codes(codes)
    n, w = codes.shape
    flat = codes.reshape(-1).view(np.int64)
    if w == 1:
        return pa.array(flat, type=pa.int64())
    offsets = pa.array(np.arange(0, (n + 1) * w, w, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(flat, type=pa.int64()))


def codes_from_arrow(column, bits: int | None = None) -> np.ndarray:
    """An Arrow column of codes (``int64``/``uint64``, or ``list``/``fixed_size_list`` of them,
    one entry per word, equal lengths) as an ``(N, words)`` ``uint64`` array: a view of the
    column's buffers when it is one chunk without nulls, else a copy."""
    arr = _as_arrow(column)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    t = arr.type
    if pa.types.is_int64(t) or pa.types.is_uint64(t):
        null = _first_null(arr)
        if null is not None:
            raise ValueError(f"row {null}: null code")
        out = arr.to_numpy(zero_copy_only=True).view(np.uint64).reshape(-1, 1)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        if not (pa.types.is_int64(t.value_type) or pa.types.is_uint64(t.value_type)):
            raise TypeError(f"code words must be int64 or uint64, got {t.value_type}")
        null = _first_null(arr)
        if null is not None:
            raise ValueError(f"row {null}: null code")
        if pa.types.is_fixed_size_list(t):
            w = t.list_size
        else:
            lengths = np.diff(arr.offsets.to_numpy(zero_copy_only=False))
            w = int(lengths[0]) if len(arr) else (bits + 63) // 64 if bits else 1
            bad = np.flatnonzero(lengths != w)
            if bad.size:
                r = int(bad[0])
                raise ValueError(f"row {r}: {lengths[r]} code words, row 0 has {w}")
        out = arr.flatten().to_numpy(zero_copy_only=True).view(np.uint64).reshape(len(arr), w)
    else:
        raise TypeError(f"codes must be int64, uint64 or lists of them, got {t}")
    codes, _ = as_codes(out, bits)
    return codes


def _column(batch: pa.RecordBatch | pa.Table, name: str):
    try:
        return batch.column(name)
    except KeyError:
        raise KeyError(f"no column `{name}` in {batch.schema.names}") from None


def signatures(
    batch: pa.RecordBatch | pa.Table,
    column: str,
    signer,
    *,
    id_column: str | None = "id",
    tokenizer: Tokenizer | None = None,
    threads: int | None = None,
) -> pa.RecordBatch:
    """The signatures of one column of a batch: ``{id, fp}``, ``id`` the batch's
    ``id_column`` (as ``int64``; left out when ``id_column`` is None or absent) and ``fp`` the
    signature (``int64`` up to 64 bits, else ``list<int64>``). One call per batch of a
    ``mapInArrow``: the text/vector column is read in place, the work runs off the GIL."""
    codes = sign_arrow(signer, _column(batch, column), tokenizer=tokenizer, threads=threads)
    cols, names = [], []
    if id_column is not None and id_column in batch.schema.names:
        ids = _column(batch, id_column)
        if isinstance(ids, pa.ChunkedArray):
            ids = ids.combine_chunks()
        cols.append(ids.cast(pa.int64()))
        names.append("id")
    cols.append(codes_to_arrow(codes))
    names.append("fp")
    return pa.RecordBatch.from_arrays(cols, names=names)


def self_join(
    batch: pa.RecordBatch | pa.Table,
    radius: int,
    *,
    bits: int | None = None,
    id_column: str = "id",
    fp_column: str = "fp",
    threads: int | None = None,
) -> pa.RecordBatch:
    """Every pair of rows of a batch of signatures within Hamming distance ``radius``
    (inclusive), by the batch's ids: ``{a: int64, b: int64, distance: int32}``, ``a < b``, each
    pair once. Without an ``id_column`` column the row numbers are the ids."""
    codes = codes_from_arrow(_column(batch, fp_column), bits)
    i, j, d = _simlsh.self_join(codes, bits if bits is not None else 64 * codes.shape[1], int(radius), threads=threads)
    if id_column in batch.schema.names:
        ids = _column(batch, id_column)
        ids = (ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids).cast(pa.int64())
        ids = ids.to_numpy(zero_copy_only=False)
        a, b = ids[i], ids[j]
        a, b = np.minimum(a, b), np.maximum(a, b)
    else:
        a, b = i, j
    return pa.RecordBatch.from_arrays(
        [pa.array(a, pa.int64()), pa.array(b, pa.int64()), pa.array(d, pa.int32())], names=["a", "b", "distance"]
    )


def clusters(edges: pa.RecordBatch | pa.Table, ids=None) -> pa.RecordBatch:
    """Connected components of the graph whose edges are the ``{a, b}`` columns of ``edges``
    (ids of any ``int64`` values): ``{id, root}`` for every id in ``ids`` (default: the ids
    named by the edges), ``root`` the smallest id of its component."""
    a = _column(edges, "a")
    b = _column(edges, "b")
    a = (a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a).to_numpy(zero_copy_only=False)
    b = (b.combine_chunks() if isinstance(b, pa.ChunkedArray) else b).to_numpy(zero_copy_only=False)
    nodes = np.unique(np.concatenate([a, b] + ([np.asarray(ids, dtype=np.int64)] if ids is not None else [])))
    ia, ib = np.searchsorted(nodes, a), np.searchsorted(nodes, b)
    labels = _simlsh.clusters(len(nodes), ia.astype(np.int64), ib.astype(np.int64))
    return pa.RecordBatch.from_arrays(
        [pa.array(nodes, pa.int64()), pa.array(nodes[labels], pa.int64())], names=["id", "root"]
    )


def scheme_keys(
    batch: pa.RecordBatch | pa.Table,
    scheme: _simlsh.Scheme,
    *,
    id_column: str = "id",
    fp_column: str = "fp",
    threads: int | None = None,
) -> pa.RecordBatch:
    """The first step of a distributed join: for each row of a batch of signatures ``{id,
    fp}`` and each group (band or table) of ``scheme`` (a :class:`simlsh.Scheme` with keys:
    bands or tables; :meth:`~simlsh.Scheme.keyed` turns a radius into tables), ``{g: int32,
    key: int64, id: int64, fp}`` (``rows x groups`` rows; the key's ``uint64`` bit pattern as
    ``int64``). Repartition the result by ``(g, key)`` and call :func:`scheme_pairs` once per
    partition."""
    codes = codes_from_arrow(_column(batch, fp_column), scheme.bits)
    keys = scheme.keys(codes, threads=threads)
    n, groups = keys.shape
    rows = np.repeat(np.arange(n), groups)
    g = np.tile(np.arange(groups, dtype=np.int32), n)
    ids = _column(batch, id_column)
    ids = (ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids).cast(pa.int64())
    return pa.RecordBatch.from_arrays(
        [pa.array(g, pa.int32()), pa.array(keys.reshape(-1).view(np.int64), pa.int64()),
         ids.take(pa.array(rows)), codes_to_arrow(codes[rows])],
        names=["g", "key", "id", "fp"],
    )


def scheme_pairs(
    batch: pa.RecordBatch | pa.Table,
    scheme: _simlsh.Scheme,
    *,
    capped: pa.RecordBatch | pa.Table | None = None,
    missed: bool = False,
) -> tuple[pa.RecordBatch, pa.RecordBatch]:
    """The second step of a distributed join, once per partition of :func:`scheme_keys` rows
    (whole ``(g, key)`` runs; any groups and order): the candidate pairs ``{a, b, distance}``
    (``a < b`` by id), each reported only by the first group its signatures agree on, so that
    the union over partitions holds every pair of the single-machine join exactly once, with
    no ``distinct`` needed; and the runs skipped for their size, ``{g, key, rows}``.

    When some run was capped anywhere, a second pass over the same partitions with
    ``capped`` (the first pass's capped runs, all partitions together) and ``missed=True``
    reports the pairs those runs hid, by their first agreeing group that was not capped."""
    def col(name):
        c = _column(batch, name)
        return (c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c).to_numpy(zero_copy_only=False)

    g = np.ascontiguousarray(col("g"), dtype=np.int32)
    ids = np.ascontiguousarray(col("id")).view(np.uint64)
    codes = np.ascontiguousarray(codes_from_arrow(_column(batch, "fp"), scheme.bits))
    cg = ck = None
    if capped is not None and capped.num_rows:
        cg = np.ascontiguousarray(_column(capped, "g").to_numpy(zero_copy_only=False), dtype=np.int32)
        ck = np.ascontiguousarray(_column(capped, "key").to_numpy(zero_copy_only=False)).view(np.uint64)
    a, b, d, kg, kk, kr = scheme.partition(g, ids, codes, capped_group=cg, capped_key=ck, missed=missed)
    pairs = pa.RecordBatch.from_arrays(
        [pa.array(a.view(np.int64)), pa.array(b.view(np.int64)), pa.array(d, pa.int32())],
        names=["a", "b", "distance"],
    )
    caps = pa.RecordBatch.from_arrays(
        [pa.array(kg, pa.int32()), pa.array(kk.view(np.int64)), pa.array(kr, pa.int64())],
        names=["g", "key", "rows"],
    )
    return pairs, caps
