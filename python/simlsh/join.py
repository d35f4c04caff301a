"""Joins and graphs over signatures: the all-pairs self-join, connected components, the k-NN
graph.

>>> import numpy as np, simlsh
>>> codes = np.array([[0b0111], [0b0001], [0b0111], [2**64 - 1]], dtype=np.uint64)
>>> i, j, d = simlsh.self_join(codes, radius=2)
>>> list(zip(i.tolist(), j.tolist(), d.tolist()))
[(0, 1, 2), (0, 2, 0), (1, 2, 2)]
>>> simlsh.clusters(len(codes), i, j).tolist()
[0, 0, 0, 3]
"""

from __future__ import annotations

import numpy as np

from . import _simlsh
from ._codes import as_codes, as_ids

__all__ = [
    "Scheme", "plan_join", "self_join", "clusters", "knn_graph", "banded_join", "verified_join", "cosine_join",
    "rerank",
]

#: Where a join's candidate pairs come from, the library's ``join::Scheme``: a Hamming radius
#: (``Scheme.radius(r)``), a banding (``Scheme.bands(bits, bands, width, ...)``) or permuted tables
#: (``Scheme.tables(bits, radius, ...)``), or its text form (``Scheme("bands:f=256,b=20,w=12")``),
#: the same that the command line records in ``--stats`` (``scheme``). Picklable.
Scheme = _simlsh.Scheme


def plan_join(
    threshold: float,
    *,
    rows: int,
    bits: int | None = None,
    features: float | None = None,
    recall: float | None = None,
    memory: int | None = None,
    probes: int | None = None,
) -> dict:
    """The library's plan of a verified join at cosine ``threshold`` over ``rows`` rows, as
    ``simlsh dedup --cosine`` makes it: at ``bits`` when the signatures exist, else the width
    chosen for rows of ``features`` nonzeros on average (signing counted), among those whose
    signatures fit their share of a run's memory budget of ``memory`` bytes (the whole budget,
    split by the library as ``simlsh dedup --memory`` splits it; when None, the library's
    default: what this process may still allocate, as the command line without ``--memory``);
    ``recall`` at the threshold (the library's
    default when None); ``probes`` the multi-probe distance its banding may use (0 or 1; the
    library's default when None, as ``simlsh dedup --probes``). A dict: ``bits``, ``scheme`` (a :class:`Scheme`), ``choice``,
    ``recall`` (the scheme's planned recall), ``cost_ns``.

    >>> import simlsh
    >>> p = simlsh.plan_join(0.8, rows=1_000_000, features=40)
    >>> p["bits"], p["scheme"].kind
    (2048, 'bands')
    """
    return _simlsh.plan_join(float(threshold), int(rows), bits, features, recall, memory, _opt_int(probes))


def _opt_int(v) -> int | None:
    """``int(v)``, or None (the library's default) for None."""
    return None if v is None else int(v)


def _featureless(featureless, n: int):
    """The rows without features of a join of ``n`` rows, as the library takes them: ``"zero"``
    (its rule: the rows whose signature is all zeros; a simlsh signer gives that signature to
    every row without features, an empty document or a zero vector, and to a row with
    features with probability ``2**-bits`` for Gaussian hyperplanes), None for ``False`` or
    None (every row takes part, as for codes that are not signatures of vectors), or the row
    numbers of a boolean mask or of row numbers (``DedupResult.empty``, say), in any order
    and repeats allowed: sorted and distinct. Other strings and rows beyond ``n`` are the
    library's errors."""
    if featureless is False or featureless is None:
        return None
    if isinstance(featureless, str):
        return featureless
    f = np.asarray(featureless)
    if f.dtype == bool:
        if f.shape != (n,):
            raise ValueError(f"featureless mask has {f.shape} entries for {n} rows")
        return np.flatnonzero(f)
    if f.size and f.dtype.kind not in "iu":
        raise ValueError(f"featureless rows must be row numbers in 0..{n}, got {f.dtype} values")
    f = np.unique(f)
    if f.dtype.kind == "u" and f.size and f[-1] > np.iinfo(np.int64).max:
        # Beyond int64, as no row number is: name the value given, not its int64 wrap.
        raise ValueError(f"featureless row {f[-1]} is beyond the {n} rows")
    return f.astype(np.int64)


def _scheme(scheme) -> _simlsh.Scheme:
    if isinstance(scheme, _simlsh.Scheme):
        return scheme
    if isinstance(scheme, str):
        return _simlsh.Scheme(scheme)
    raise TypeError(f"scheme must be a simlsh.Scheme or its text form, got {type(scheme).__name__}")


def self_join(
    codes, radius: int, *, bits: int | None = None, featureless="zero", threads: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every unordered pair of rows of ``codes`` within Hamming distance ``radius``
    (inclusive), each exactly once: ``(i, j, distance)`` arrays (``int64``, ``int64``,
    ``int32``) with ``i < j``, sorted by ``(i, j)``. Exact for any radius (Manku's permuted
    tables built for the join; all pairs compared when the radius is near ``bits / 2``).
    ``bits`` defaults to ``64 * words``; it only matters for checking that no bit beyond it
    is set. Rows without features are never paired, as the command line keeps them apart:
    by default those whose signature is all zeros (see ``featureless`` below; ``False`` pairs
    every row).

    ``featureless``: ``"zero"`` (rows whose signature is all zeros: a simlsh signer gives that
    signature to every row without features, an empty document or a zero vector, and to a
    row with features with probability ``2**-bits``), ``False``, or a mask or the row numbers
    of the rows without features."""
    codes, bits = as_codes(codes, bits)
    if isinstance(radius, bool) or not isinstance(radius, (int, np.integer)) or not 0 <= radius < 2**32:
        raise ValueError(f"radius must be an integer in 0..2^32, got {radius!r}")
    rows = _featureless(featureless, codes.shape[0])
    return _simlsh.self_join(codes, bits, int(radius), featureless=rows, threads=threads)


def clusters(n: int, i, j) -> np.ndarray:
    """Connected components of the graph on ``0..n`` with edges ``(i[k], j[k])`` (e.g. from
    :func:`self_join`): ``labels`` (``int64``, length ``n``), ``labels[v]`` the smallest member
    of ``v``'s component, so that labels do not depend on the order of the edges."""
    i, j = as_ids(i, name="i"), as_ids(j, name="j")
    return _simlsh.clusters(int(n), i, j)


def knn_graph(
    codes,
    k: int,
    *,
    index=None,
    method: str | None = None,
    seed: int | None = None,
    bits: int | None = None,
    featureless="zero",
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The k-nearest-neighbour graph of the rows of ``codes``: ``(D, I)``, ``(N, k)`` arrays of
    each row's ``k`` nearest *other* rows sorted by ``(distance, id)`` (ties by the smaller
    id; id -1 and distance ``2**31 - 1`` where fewer exist). ``method="exact"`` (default the
    library's, exact) compares every pair of rows once (``O(N^2)``, in one call);
    ``method="approx"`` does not (random partition trees refined by NN-Descent rounds, drawn
    from ``seed`` (default the library's, 0): exact distances, lists
    that may miss true neighbours, the same for any thread count); or the graph is answered by
    ``index`` (a :class:`simlsh.Index` holding row ``i`` under id ``i``, e.g. ``MultiIndex``
    for close neighbours). Rows without features (``featureless``, as :func:`self_join`) have
    no neighbours and are no one's (without an index)."""
    if index is not None:
        bits = index.bits if bits is None else bits
    codes, bits = as_codes(codes, bits)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    core = index._core if index is not None else None
    rows = _featureless(featureless, codes.shape[0]) if index is None else None
    return _simlsh.knn_graph(
        codes, bits, int(k), index=core, featureless=rows, threads=threads, method=method, seed=_opt_int(seed)
    )


def banded_join(
    codes,
    scheme=None,
    *,
    bands: int | None = None,
    width: int | None = None,
    max_distance: int | None = None,
    max_group: int | None = None,
    prefix: tuple[int, int] | None = None,
    bits: int | None = None,
    return_stats: bool = False,
    featureless="zero",
    threads: int | None = None,
):
    """The banded self-join: every pair of rows whose signatures agree on all ``width`` bits
    of some band (band ``b`` is bits ``b*width .. (b+1)*width``), and are within
    ``max_distance`` when given (and, with ``prefix=(words, radius)``, whose first ``words``
    64-bit words are within ``radius``: the planner's filter of wide signatures), each once:
    ``(i, j, distance)`` sorted by ``(i, j)``, as :func:`self_join`. The banding is
    ``scheme`` (a :class:`Scheme` of kind ``bands`` or its text form) or the one these
    arguments describe. Runs of more than ``max_group`` rows sharing a key are skipped (listed
    in the statistics). :func:`plan_join` plans a banding for a recall at a cosine.
    ``return_stats=True`` adds a dict: ``checked``, ``candidates``, ``capped``. Rows without
    features are never paired (``featureless``, as :func:`self_join`).
    """
    codes, bits = as_codes(codes, bits)
    if scheme is None:
        if bands is None or width is None:
            raise ValueError("give a scheme, or bands and width")
        scheme = Scheme.bands(bits, int(bands), int(width), max_distance, max_group, prefix)
    elif any(v is not None for v in (bands, width, max_distance, max_group, prefix)):
        raise ValueError("give a scheme or its parameters (bands, width, ...), not both")
    scheme = _scheme(scheme)

    rows = _featureless(featureless, codes.shape[0])
    (i, j, d), stats = _simlsh.banded_join(codes, bits, scheme, featureless=rows, threads=threads)
    return (i, j, d, stats) if return_stats else (i, j, d)


def verified_join(
    codes,
    X,
    threshold: float,
    *,
    scheme=None,
    radius: int | None = None,
    recall: float | None = None,
    bits: int | None = None,
    return_report: bool = False,
    threads: int | None = None,
):
    """Exact answers from signature candidates: every pair of rows whose **exact** cosine
    (of the vectors ``X``, dense ``float32`` or a SciPy CSR matrix of ``float32`` with sorted
    indices) is at least ``threshold``, among the candidate pairs of their signatures
    ``codes``: ``(i, j, distance, cosine)`` sorted by ``(i, j)``.

    Candidates come from ``scheme`` (a :class:`Scheme` or its text form; ``radius=r`` is
    short for ``Scheme.radius(r)``), or, without one, from the library's planner for
    ``recall`` at the threshold (the cheaper of the exact Hamming join and a banding, as
    :func:`plan_join`). Rows of norm 0 are never paired. ``return_report=True`` adds a dict:
    ``zero_rows``, ``candidates``, ``pairs``, ``capped``, ``scheme``.
    """
    codes, bits = as_codes(codes, bits)
    if radius is not None:
        if scheme is not None:
            raise ValueError("give a scheme or a radius, not both")
        scheme = Scheme.radius(int(radius))
    kw = dict(scheme=_scheme(scheme) if scheme is not None else None, recall=recall, threads=threads)
    if type(X).__module__.startswith("scipy.sparse"):
        if X.format != "csr" or X.dtype != np.float32:
            raise TypeError("sparse vectors must be a float32 CSR matrix (X.tocsr().astype(np.float32))")
        X = (X.indptr.astype(np.int64, copy=False), X.indices.astype(np.int64, copy=False), X.data, X.shape[1])
    else:
        if not isinstance(X, np.ndarray) or X.dtype != np.float32 or X.ndim != 2:
            raise TypeError("dense vectors must be a 2-D float32 NumPy array (X.astype(np.float32))")
    pairs, report = _simlsh.verified_join(codes, bits, X, float(threshold), **kw)
    return (*pairs, report) if return_report else pairs


def cosine_join(X, threshold: float, *, return_report: bool = False, threads: int | None = None):
    """Every pair of rows of the SciPy CSR matrix ``X`` (``float32``, sorted indices) whose
    **exact** cosine is at least ``threshold`` (``> 0``), found without signatures:
    ``(i, j, cosine)`` sorted by ``(i, j)``, ``i < j``. Recall is 1.

    The rows are paired by the features they share (prefix filtering: each row indexes its
    rarest features, enough of its norm that any pair at the threshold shares one of them), and
    every candidate's cosine is computed exactly, the cosine :func:`verified_join` gives. It
    is the cheaper way for sparse rows whose features are specific (TF-IDF of text), the
    command line's ``dedup --exact``; dense rows share every coordinate and are refused
    (``ValueError``). Rows of norm 0 are never paired. ``return_report=True`` adds a dict:
    ``zero_rows``, ``indexed`` (prefix features), ``examined`` (pairs of postings),
    ``candidates`` (cosines computed), ``pairs``, ``passes``.

    >>> import numpy as np, scipy.sparse as sp, simlsh
    >>> X = sp.csr_matrix(np.array([[1, 1, 0], [1, 1, 0.1], [0, 0, 1]], dtype=np.float32))
    >>> i, j, c = simlsh.cosine_join(X, 0.9)
    >>> list(zip(i.tolist(), j.tolist(), np.round(c, 4).tolist()))
    [(0, 1, 0.9975)]
    """
    if not type(X).__module__.startswith("scipy.sparse"):
        raise ValueError(
            "the exact join pairs rows by the features they share, and dense rows share every coordinate: "
            "give a SciPy CSR matrix, or take verified_join (candidates from signatures)"
        )
    if X.format != "csr" or X.dtype != np.float32:
        raise TypeError("sparse vectors must be a float32 CSR matrix (X.tocsr().astype(np.float32))")
    csr = (X.indptr.astype(np.int64, copy=False), X.indices.astype(np.int64, copy=False), X.data, X.shape[1])
    pairs, report = _simlsh.cosine_join(csr, float(threshold), threads=threads)
    return (*pairs, report) if return_report else pairs


def rerank(queries, base, ids, k: int, *, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The exact-cosine k-NN from Hamming candidates: for each query row ``q``, the candidate
    ids ``ids[q]`` (e.g. the ``I`` of an index's ``search(codes, m)`` with ``m ≫ k``; ``-1``
    entries are skipped) scored by the exact cosine of ``queries[q]`` with ``base[id]`` (in
    ``float64``), the best ``k`` kept. Returns ``(C, I)`` as FAISS's inner-product indexes do:
    ``(nq, k)`` arrays of ``float32`` cosines, highest first (ties by the smaller id), and
    ``int64`` ids; ``-inf`` and ``-1`` where a query has fewer than ``k`` candidates. Rows of
    norm 0 have cosine 0.

    ``queries`` and ``base`` are both dense 2-D ``float32`` arrays (read in place) or both
    SciPy CSR matrices of ``float32`` with sorted indices.

    >>> import numpy as np, simlsh
    >>> base = np.array([[1, 0], [0.8, 0.6], [0, 1], [-1, 0]], dtype=np.float32)
    >>> C, I = simlsh.rerank(np.array([[0.9, 0.5]], dtype=np.float32), base, np.array([[0, 1, 2, 3]]), k=2)
    >>> I.tolist(), [round(float(c), 3) for c in C[0]]
    ([[1, 0]], [0.991, 0.874])
    """
    ids = np.asarray(ids)
    if ids.ndim != 2 or ids.dtype.kind not in "iu":
        raise TypeError("ids must be a 2-D integer array (the I of an index's search)")
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    k = int(k)
    if type(queries).__module__.startswith("scipy.sparse") or type(base).__module__.startswith("scipy.sparse"):
        mats = []
        for name, m in (("queries", queries), ("base", base)):
            if not type(m).__module__.startswith("scipy.sparse") or m.format != "csr" or m.dtype != np.float32:
                raise TypeError(f"sparse {name} must be a float32 CSR matrix ({name}.tocsr().astype(np.float32)), as the other one is")
            mats.append((m.indptr.astype(np.int64, copy=False), m.indices.astype(np.int64, copy=False), m.data, m.shape[1]))
        return _simlsh.rerank(*mats, ids, k, threads=threads)
    for name, m in (("queries", queries), ("base", base)):
        if not isinstance(m, np.ndarray) or m.dtype != np.float32 or m.ndim != 2:
            raise TypeError(f"dense {name} must be a 2-D float32 NumPy array ({name}.astype(np.float32))")
    return _simlsh.rerank(queries, base, ids, k, threads=threads)
