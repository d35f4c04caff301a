"""Online near-duplicate detection: a durable store of codes, vectors or documents under
``uint64`` ids (:class:`Store`, embedded), and the same calls against ``simlsh serve``
(:class:`~simlsh.Client`).

A store answers queries by Hamming ``radius``, exact ``cosine`` threshold (vector and text
stores keep what exact cosines need; the text model is fixed at creation and recorded in
the store) or ``k`` nearest, and **check-and-insert**: an item is inserted only if no live
item matches it, atomically (two near-duplicates sent at once never both get in). Every
acknowledged write is on disk (write-ahead log, group commit) and visible to the next query.

>>> import os, tempfile, numpy as np, simlsh
>>> path = os.path.join(tempfile.mkdtemp(), "store")
>>> with simlsh.Store.create(path, bits=64) as store:
...     r = store.check_insert([1, 2], codes=np.array([[0b1011], [0b1010]], dtype=np.uint64), radius=3)
...     [x.inserted for x in r], r[1].matches[0]
([True, False], Match(id=1, distance=1, cosine=None))
>>> with simlsh.Store.open(path) as store:
...     len(store), store.get(1)["code"]
(1, [11])
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import numpy as np

from . import _simlsh
from ._codes import as_codes

__all__ = ["Store", "Match", "CheckResult"]


class Match(NamedTuple):
    """A stored item found by a query."""

    id: int
    distance: int
    cosine: float | None


class CheckResult(NamedTuple):
    """What a check-and-insert did: ``inserted``, or the live ``matches`` that kept it out."""

    inserted: bool
    matches: list[Match]


def _ids(ids) -> np.ndarray:
    a = np.asarray(ids)
    if a.ndim == 0:
        a = a.reshape(1)
    if a.dtype.kind not in "iu" and a.size:
        raise TypeError(f"ids must be integers, not {a.dtype}")
    if a.dtype.kind == "i" and a.size and a.min() < 0:
        raise ValueError("ids are unsigned 64-bit integers: a negative id was given")
    return np.ascontiguousarray(a, dtype=np.uint64)


def _items(codes, vectors, texts) -> dict[str, Any]:
    given = [x is not None for x in (codes, vectors, texts)]
    if sum(given) != 1:
        raise ValueError("give exactly one of `codes`, `vectors` and `texts`")
    if codes is not None:
        arr, _ = as_codes(codes)
        return {"codes": arr}
    if vectors is not None:
        v = np.ascontiguousarray(vectors, dtype=np.float32)
        if v.ndim == 1:
            v = v.reshape(1, -1)
        if v.ndim != 2:
            raise ValueError(f"vectors must be 2-D (n, dim), not of shape {v.shape}")
        return {"vectors": v}
    if isinstance(texts, str):
        texts = [texts]
    return {"texts": [str(t) for t in texts]}


def _reach(radius, cosine, k) -> dict[str, Any]:
    if sum(x is not None for x in (radius, cosine, k)) != 1:
        raise ValueError("give exactly one of `radius`, `cosine` and `k`")
    return {"radius": radius, "cosine": cosine, "k": k}


def _matches(m) -> list[Match]:
    return [Match(*x) for x in m]


class Store:
    """A durable store (a directory). Create with :meth:`create`, open with :meth:`open`;
    a context manager (leaving it checkpoints and stops the writer)."""

    __slots__ = ("_core", "path")

    def __init__(self, _core: _simlsh.Store, path: str):
        self._core = _core
        self.path = path

    @classmethod
    def create(
        cls,
        path: str | os.PathLike,
        *,
        content: str | None = None,
        bits: int | None = None,
        dim: int | None = None,
        tokenizer=None,
        index: str | None = None,
        signer: str | None = None,
        seed: int | None = None,
        recall: float | None = None,
        delta_limit: int | None = None,
    ) -> Store:
        """A new store in directory ``path`` (created; it must be empty).

        ``content`` (default the library's, codes; text with a ``tokenizer``): ``codes``
        (radius and k queries), ``vectors`` (``dim`` floats per item,
        exact cosines) or ``text`` (documents tokenized by ``tokenizer``, a
        :class:`~simlsh.Tokenizer` with its table if TF-IDF, default words with TF weights;
        exact cosines). ``bits``, the
        segment ``index`` (an index spec such as ``manku:k=3``), the ``signer`` kind,
        ``seed`` (default the library's, 0), the ``recall`` of cosine queries and
        ``delta_limit`` default to the library's choices.
        """
        if tokenizer is not None and content == "codes":
            content = "text"
        core = _simlsh.Store.create(
            os.fspath(path),
            content=content,
            bits=bits,
            dim=dim,
            tokenizer=None if tokenizer is None else tokenizer._core,
            index=index,
            signer=signer,
            seed=seed,
            recall=recall,
            delta_limit=delta_limit,
        )
        return cls(core, os.fspath(path))

    @classmethod
    def open(
        cls,
        path: str | os.PathLike,
        *,
        durability: str | None = None,
        read_only: bool = False,
        verify: bool | None = None,
    ) -> Store:
        """Opens the store at ``path`` (replaying its log): ``durability`` (default the
        library's, sync) ``sync`` (writes acknowledged once on disk) or ``os`` (once handed to
        the system: survives the process being killed, not a power loss). ``verify`` (default
        the library's, True) checks the segments' checksums. ``read_only`` opens its last
        checkpoint without the writer's lock, from any number of processes."""
        core = _simlsh.Store.open(os.fspath(path), durability=durability, read_only=read_only, verify=verify)
        return cls(core, os.fspath(path))

    def insert(self, ids, *, codes=None, vectors=None, texts=None) -> list[bool]:
        """Inserts items under ``ids`` (replacing what is stored under them); per item,
        whether it replaced one."""
        return self._core.insert(_ids(ids), **_items(codes, vectors, texts))

    def remove(self, ids) -> list[bool]:
        """Removes ``ids``; per id, whether it was stored."""
        return self._core.remove(_ids(ids))

    def check_insert(
        self, ids, *, codes=None, vectors=None, texts=None, radius=None, cosine=None, k=None
    ) -> list[CheckResult]:
        """Inserts each item unless a live item matches it (``radius``, ``cosine`` or ``k``),
        atomically and in order (an item matching one inserted earlier in the call is kept
        out)."""
        out = self._core.check_insert(_ids(ids), **_items(codes, vectors, texts), **_reach(radius, cosine, k))
        return [CheckResult(i, _matches(m)) for i, m in out]

    def query(self, *, codes=None, vectors=None, texts=None, radius=None, cosine=None, k=None) -> list[list[Match]]:
        """Per query, the live items within ``radius``, at ``cosine`` or above (exact), or
        the ``k`` nearest."""
        return [_matches(m) for m in self._core.query(**_items(codes, vectors, texts), **_reach(radius, cosine, k))]

    def get(self, id: int) -> dict | None:
        """The item under ``id``: ``{"id", "code", and "vector" or "features"}``, or None."""
        r = self._core.get(int(id))
        if r is None:
            return None
        code, pay = r
        out: dict[str, Any] = {"id": int(id), "code": code}
        if isinstance(pay, tuple):
            out["features"] = {"keys": pay[0], "weights": pay[1]}
        elif pay is not None:
            out["vector"] = pay
        return out

    def stats(self) -> dict:
        """Figures of the store (items, segments, log, memory)."""
        return self._core.stats()

    def checkpoint(self) -> None:
        """Writes a checkpoint now (the log it replaces is dropped)."""
        self._core.checkpoint()

    def close(self) -> None:
        """Checkpoints and stops the writer; later writes raise ``RuntimeError``."""
        self._core.close()

    @property
    def bits(self) -> int:
        return self._core.bits

    @property
    def content(self) -> str:
        return self._core.content

    def __len__(self) -> int:
        return len(self._core)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.path!r}, {len(self)} items, {self.bits}-bit {self.content})"
