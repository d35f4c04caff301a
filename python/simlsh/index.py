"""Hamming indexes with FAISS-shaped results.

Every index stores ``f``-bit codes (``uint64`` arrays of shape ``(N, words)``, as
:meth:`Signer.sign` returns them) under ``uint32`` ids and answers exact queries with the same
semantics (the Rust library's ``HammingIndex``):

- :meth:`Index.range_search` returns *every* stored code within distance ``radius``,
  **inclusive** (FAISS's binary range search is exclusive: ``radius=3`` here is FAISS's 4);
- :meth:`Index.search` returns the ``k`` nearest, ties at the ``k``-th distance broken by the
  smaller id (approximate for :class:`PermutationIndex` and :class:`GraphIndex`);
- results are sorted by ``(distance, id)``; inserts and removals keep every search exact.

=====================  ==========================================================
index                  search
=====================  ==========================================================
LinearScan             exact, any radius or k, by hardware popcount; no build
PermutedTables         Manku's permuted tables: exact radius <= ``radius`` fastest
MultiIndex             multi-index hashing: exact radius and exact k-NN
PermutationIndex       Charikar's permutation search: approximate k-NN, exact radius
GraphIndex             a navigable graph: approximate k-NN, sublinear; exact radius
=====================  ==========================================================

Indexes save to the library's file format (:meth:`Index.save`; the command line's
``simlsh index`` reads and writes the same files) and load memory-mapped
(:func:`load_index`); they pickle (the file's bytes). :func:`update_index` changes an index
file in place as ``simlsh index add`` does: under the file's lock, verified, saved atomically.

An index is safe to share between threads: searches run in parallel, and each :meth:`Index.add`
and :meth:`Index.remove` is all or nothing and runs alone (a search or a :meth:`Index.save`
sees the index before or after it, never half of it).

>>> import numpy as np, simlsh
>>> codes = np.array([[0b1011], [0b1000], [2**64 - 1]], dtype=np.uint64)
>>> idx = simlsh.PermutedTables(bits=64, radius=2)
>>> idx.add(codes)
>>> lims, D, I = idx.range_search(np.array([[0b1001]], dtype=np.uint64), 1)
>>> lims.tolist(), D.tolist(), I.tolist()
([0, 2], [1, 1], [0, 1])
>>> D, I = idx.search(np.array([[0b1001]], dtype=np.uint64), k=2)
>>> I.tolist()
[[0, 1]]
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _simlsh
from ._codes import as_codes, as_ids
from .join import _featureless

if TYPE_CHECKING:
    from .signers import Signer
    from .text import Tokenizer


__all__ = [
    "Index", "LinearScan", "PermutedTables", "MultiIndex", "PermutationIndex", "GraphIndex", "load_index",
    "update_index", "verify_index",
]


class Index:
    """An index of any kind given by its specification, the compact text form shared with the
    command line (``simlsh index build --index SPEC``) and the Rust library's ``IndexSpec``:
    ``linear``, ``manku:k=3``, ``manku:k=3,levels=4+4``, ``mih``, ``mih:m=4``,
    ``permutation:q=64,beam=128``; default the library's, manku (permuted tables at their
    default radius).

    >>> Index(bits=64, spec="mih:m=4").kind
    'mih'
    """

    __slots__ = ("_core", "_requested")

    def __init__(self, *, bits: int, spec: str | None = None):
        if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or bits < 1:
            raise ValueError(f"invalid parameter `bits`: must be an integer >= 1, got {bits!r}")
        self._core = _simlsh.Index(spec, int(bits))
        self._requested = spec if spec is not None else self._core.spec

    @property
    def bits(self) -> int:
        """Signature width ``f``."""
        return self._core.bits

    @property
    def kind(self) -> str:
        """``linear``, ``manku``, ``mih`` or ``permutation``."""
        return self._core.kind

    @property
    def spec(self) -> str:
        """The specification of the index as built: a planned design written out, so that
        building the same codes with it gives the same index."""
        return self._core.built_spec

    @property
    def exact_knn(self) -> bool:
        """Whether :meth:`search` is exact (False for permutation search)."""
        return self._core.exact_knn

    @property
    def memory(self) -> int:
        """Bytes of memory held (heap plus memory-mapped data)."""
        return self._core.bytes()

    def __len__(self) -> int:
        return len(self._core)

    @property
    def ntotal(self) -> int:
        """Number of stored codes (FAISS's name)."""
        return len(self._core)

    def add(self, codes, ids=None, *, threads: int | None = None) -> None:
        """Stores ``codes`` (``(N, words)`` ``uint64``, or FAISS's ``uint8`` bytes) under ``ids``
        (integers in ``0..2^32``, one per row; default: the ids following the largest ever
        stored, ``0, 1, ...`` for a new index, so that a default id never collides with a
        stored one, even after removals). An id already stored, a code wider than ``bits`` or with bits set
        beyond ``bits`` raises ``ValueError`` naming the row. All or nothing: a failing add
        stores none of its codes; concurrent adds run one after the other, and a concurrent
        search or :meth:`save` sees the index before or after the add. Adding to an empty
        index without ids builds it in one pass (the fastest way to make a large index)."""
        codes, _ = as_codes(codes, self.bits)
        if ids is not None:
            ids = as_ids(ids, codes.shape[0])
        self._core.add(codes, ids, threads=threads)

    def remove(self, ids) -> int:
        """Removes ``ids``; returns how many were stored (absent ids are ignored)."""
        return self._core.remove(as_ids(ids))

    def search(
        self, queries, k: int, *, featureless="zero", threads: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest stored codes of each query: ``(D, I)``, ``(n, k)`` arrays of
        distances (``int32``) and ids (``int64``) sorted by ``(distance, id)``; where fewer
        than ``k`` codes are stored, ``I`` is -1 and ``D`` is ``2**31 - 1`` (as FAISS).

        ``featureless``, as in :func:`simlsh.self_join`: rows without features are no one's
        neighbours. By default (``"zero"``) all-zero codes are such rows (a simlsh signer
        gives that code to every empty document and zero vector): an all-zero query has no
        neighbours and stored all-zero codes are never returned. ``False`` searches codes as
        codes; a mask or row numbers name the queries without features."""
        q, _ = as_codes(queries, self.bits, "queries")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValueError(f"k must be a non-negative integer, got {k!r}")
        k = int(k)
        return self._core.search(q, k, _featureless(featureless, q.shape[0]), threads=threads)

    def range_search(
        self, queries, radius: int, *, featureless="zero", threads: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every stored code within Hamming distance ``radius`` (inclusive) of each query:
        ``(lims, D, I)`` as FAISS, the hits of query ``q`` being ``D[lims[q]:lims[q+1]]`` and
        ``I[lims[q]:lims[q+1]]``, sorted by ``(distance, id)``. ``featureless`` as in
        :meth:`search`."""
        q, _ = as_codes(queries, self.bits, "queries")
        if isinstance(radius, bool) or not isinstance(radius, (int, np.integer)) or not 0 <= radius < 2**32:
            raise ValueError(f"radius must be an integer in 0..2^32, got {radius!r}")
        return self._core.range_search(q, int(radius), _featureless(featureless, q.shape[0]), threads=threads)

    def save(self, path: str | os.PathLike) -> None:
        """Saves the index in the library's file format (read by :func:`load_index` and the
        command line's ``simlsh index query``), atomically. An index loaded from a file first
        verifies that file whole (checksum and contents, once): a corrupt file raises
        :class:`simlsh.FormatError` and is never rewritten with a fresh checksum. To change an
        index file that other runs may change too, use :func:`update_index`."""
        self._core.save(os.fspath(path))

    @property
    def signer(self) -> Signer | None:
        """The signer recorded with the codes (an index built by ``simlsh index build`` from
        vectors or documents), rebuilt from its parameters: it signs queries as the stored
        codes were signed. ``None`` when the index records none (codes added from Python)."""
        rec = self._core.signer_record
        if rec is None:
            return None
        from .signers import HASHED, signer

        spec, bits, seed, dim = rec
        kind = _simlsh.Signer.parse_spec(spec)[0]
        return signer(spec, bits=bits, seed=seed, dim=None if kind in HASHED else dim)

    @property
    def tokenizer(self) -> Tokenizer | None:
        """The tokenizer recorded with codes of documents (its options, stop words and TF-IDF
        table, embedded in the index file), fitted: ``index.signer.sign(texts,
        tokenizer=index.tokenizer)`` signs query documents as ``simlsh index query`` does.
        ``None`` for codes of vectors or of unknown origin."""
        core = self._core.tokenizer
        if core is None:
            return None
        from .text import Tokenizer

        return Tokenizer._from_core(core)

    @property
    def verified(self) -> bool:
        """False for an index loaded from a file whose checksum and contents have not been
        verified yet (:func:`load_index` opens in ``O(1)``; :meth:`save` verifies first)."""
        return self._core.verified

    @classmethod
    def load(cls, path: str | os.PathLike, *, verify: bool | None = None, copy: bool | None = None) -> Index:
        """Loads an index file of any kind (memory-mapped: no copy, pages shared between
        processes). Equivalent to :func:`load_index`."""
        return load_index(path, verify=verify, copy=copy)

    def __reduce__(self):
        return (_index_from_bytes, (self._core.to_bytes(), self._requested))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(bits={self.bits}, spec={self.spec!r}, len={len(self)})"


class LinearScan(Index):
    """Exact search by comparing every stored code (hardware popcount), any radius or ``k``:
    no build, ``8 * words + 4`` bytes per code. Queries in a batch share one pass."""

    __slots__ = ()

    def __init__(self, *, bits: int):
        super().__init__(bits=bits, spec="linear")


class PermutedTables(Index):
    """Manku, Jain & Das Sarma's permuted tables: exact radius search up to ``radius`` by
    probing (larger radii scan), the fastest for 64-bit codes.

    radius : the radius ``k`` the tables answer by probing (default the library's, 3).
    levels : blocks per level, e.g. ``[4]`` (4 tables for k = 3) or ``[4, 4]`` (16 tables);
    blocks : one level of this many blocks; tables : the planned design with at most this
    many tables; memory_budget : the planned design within this many bytes. At most one of
    them; default the planner's design of least query cost for the data size.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        bits: int,
        radius: int | None = None,
        levels: list[int] | None = None,
        blocks: int | None = None,
        tables: int | None = None,
        memory_budget: int | None = None,
    ):
        parts = [] if radius is None else [f"k={int(radius)}"]
        given = [n for n, v in (("levels", levels), ("blocks", blocks), ("tables", tables),
                                ("memory_budget", memory_budget)) if v is not None]
        if len(given) > 1:
            raise ValueError(f"give at most one of levels, blocks, tables, memory_budget (got {', '.join(given)})")
        if levels is not None:
            parts.append("levels=" + "+".join(str(int(b)) for b in levels))
        if blocks is not None:
            parts.append(f"blocks={int(blocks)}")
        if tables is not None:
            parts.append(f"tables={int(tables)}")
        if memory_budget is not None:
            parts.append(f"budget={int(memory_budget)}")
        super().__init__(bits=bits, spec="manku" + (":" + ",".join(parts) if parts else ""))


class MultiIndex(Index):
    """Multi-index hashing (Norouzi, Punjani & Fleet): exact radius search and exact k-NN by
    growing the radius.

    substrings : number of substrings ``m`` (default automatic from the data size);
    delta_limit : size of the insertion buffer before a rebuild (default automatic);
    fallback : let searches fall back to a scan when probing would cost more (default True).
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        bits: int,
        substrings: int | None = None,
        delta_limit: int | None = None,
        fallback: bool = True,
    ):
        parts = []
        if substrings is not None:
            parts.append(f"m={int(substrings)}")
        if delta_limit is not None:
            parts.append(f"delta={int(delta_limit)}")
        if not fallback:
            parts.append("fallback=false")
        super().__init__(bits=bits, spec="mih" + (":" + ",".join(parts) if parts else ""))


class PermutationIndex(Index):
    """Permutation search (Charikar 2002; Ravichandran, Pantel & Hovy 2005): approximate k-NN
    for wide codes from ``permutations`` sorted orders of the bits, ``beam`` neighbours checked
    in each; radius search is exact.

    permutations : number of permutations ``q`` (default the library's, 16); beam : ``B``
    (default the library's, 32); seed : seed of the permutations (default the library's, 0).
    """

    __slots__ = ()

    def __init__(
        self, *, bits: int, permutations: int | None = None, beam: int | None = None, seed: int | None = None
    ):
        parts = [f"{k}={int(v)}" for k, v in (("q", permutations), ("beam", beam), ("seed", seed)) if v is not None]
        super().__init__(bits=bits, spec="permutation" + (":" + ",".join(parts) if parts else ""))


class GraphIndex(Index):
    """A graph index: approximate k-NN by a beam search over a navigable graph of the codes
    (out-degree ``m``), sublinear where codes have close neighbours (signatures of
    embeddings); radius search is exact (a scan). A stored copy of a query is always found
    (distance 0). On codes whose neighbours are hardly closer than random ones the build's
    check finds the graph no better than the scan and :meth:`search` scans instead
    (``fallback``; see :attr:`check`). Parameters left ``None`` take the library's defaults
    (``simlsh index kinds``).

    m : out-degree (memory ``4 m`` bytes a code); ef_search : the search beam, FAISS's
    ``efSearch`` (also settable later); ef_construction : the beam of inserts after the
    build; seed : seed of the build; fallback : let k-NN scan when the check says so.

    >>> import numpy as np, simlsh
    >>> rng = np.random.default_rng(0)
    >>> codes = simlsh.HyperplaneSigner(dim=16, bits=128, seed=1).sign(rng.standard_normal((500, 16)).astype(np.float32))
    >>> idx = simlsh.GraphIndex(bits=128, m=16)
    >>> idx.add(codes)
    >>> D, I = idx.search(codes[:2], k=3)
    >>> I[:, 0].tolist(), D[:, 0].tolist()
    ([0, 1], [0, 0])
    >>> idx.ef_search = 32
    >>> idx.ef_search
    32
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        bits: int,
        m: int | None = None,
        ef_search: int | None = None,
        ef_construction: int | None = None,
        seed: int | None = None,
        fallback: bool = True,
    ):
        parts = []
        for key, v in (("m", m), ("ef", ef_search), ("efc", ef_construction), ("seed", seed)):
            if v is not None:
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                    raise ValueError(f"invalid parameter `{key}`: must be a non-negative integer, got {v!r}")
                parts.append(f"{key}={int(v)}")
        if not fallback:
            parts.append("fallback=false")
        super().__init__(bits=bits, spec="graph" + (":" + ",".join(parts) if parts else ""))

    @property
    def ef_search(self) -> int:
        """The search beam: nodes a k-NN search keeps (it uses ``max(ef_search, k)``);
        larger finds more true neighbours, slower. FAISS's ``efSearch``."""
        return self._core.ef

    @ef_search.setter
    def ef_search(self, ef: int) -> None:
        if isinstance(ef, bool) or not isinstance(ef, (int, np.integer)) or ef < 1:
            raise ValueError(f"ef_search must be an integer >= 1, got {ef!r}")
        self._core.set_ef(int(ef))

    @property
    def check(self) -> dict:
        """The build's check of the graph against the scan: ``mode`` (``"graph"`` or
        ``"scan"``, how :meth:`search` answers), ``reason``, the sampled tie-aware
        ``recall``, mean ``distances`` a search computed, ``sample`` and ``nodes``."""
        return self._core.graph_check()


_CLASSES = {"linear": LinearScan, "manku": PermutedTables, "mih": MultiIndex,
            "permutation": PermutationIndex, "graph": GraphIndex}


def _wrap(core: Any, requested: str | None = None) -> Index:
    obj = object.__new__(_CLASSES.get(core.kind, Index))
    obj._core = core
    obj._requested = requested if requested is not None else core.built_spec
    return obj


def _index_from_bytes(data: bytes, requested: str | None = None) -> Index:
    return _wrap(_simlsh.Index.from_bytes(data), requested)


def load_index(path: str | os.PathLike, *, verify: bool | None = None, copy: bool | None = None) -> Index:
    """Loads an index file of any kind, as written by :meth:`Index.save` or the command line
    (``simlsh index build``), memory-mapped: opening checks the header, parameters and section
    lengths without reading the data; ``verify=True`` first checks the whole file (checksum
    and the index's invariants, ``O(file size)``, as ``simlsh index verify``; default the
    library's, False). An index loaded
    unverified is verified before it is first saved (:meth:`Index.save`). A missing file
    raises ``FileNotFoundError``; a foreign, truncated or corrupt one
    :class:`simlsh.FormatError` (an ``OSError``).

    ``copy=True`` reads the file into memory instead of mapping it (``O(file size)``; default
    the library's, False). A mapped
    file that another program truncates or rewrites in place (``cp new old``,
    ``truncate``, a shell's ``>``; simlsh itself always replaces files by renaming) kills the
    process with ``SIGBUS`` at the next access to a page past the new end, which Python cannot
    catch; a copy is not affected."""
    return _wrap(_simlsh.Index.load(os.fspath(path), verify=verify, copy=copy))


@contextlib.contextmanager
def update_index(path: str | os.PathLike, *, copy: bool | None = None) -> Iterator[Index]:
    """Changes an index file in place, as ``simlsh index add`` and ``simlsh index remove``
    do: takes the file's advisory lock (the command line's; waiting for other holders), loads
    the index verified whole (checksum and contents: a corrupt file raises
    :class:`simlsh.FormatError` and is left as it is), gives it to the ``with`` block, then
    saves it atomically over the file and releases the lock. An exception in the block leaves
    the file unchanged. Read-modify-writes of one file by this function and the command line
    thus follow one another, and none is lost (a :func:`load_index` ... :meth:`Index.save`
    without the lock loses the changes another run makes in between).

    >>> import tempfile, pathlib
    >>> import numpy as np, simlsh
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "codes.idx"
    >>> simlsh.LinearScan(bits=64).save(path)
    >>> with simlsh.update_index(path) as idx:
    ...     idx.add(np.array([[1], [2]], dtype=np.uint64))
    >>> len(simlsh.load_index(path))
    2
    """
    path = os.fspath(path)
    lock = _simlsh.FileLock(path)
    try:
        idx = _wrap(_simlsh.Index.load(path, verify=True, copy=copy))
        yield idx
        idx.save(path)
    finally:
        lock.release()


def verify_index(path: str | os.PathLike) -> None:
    """Checks an index file whole (checksum, every invariant of the index it holds); raises
    :class:`simlsh.FormatError` naming the file and what is wrong."""
    _simlsh.Index.verify(os.fspath(path))
