"""Validation of code arrays (signatures as ``uint64`` words) shared by indexes and joins."""

from __future__ import annotations

import re

import numpy as np

__all__ = ["as_codes", "as_ids", "shift_rows"]

_ROW = re.compile(r"\brow (\d+)")


def shift_rows(exc: Exception, offset: int) -> Exception:
    """``exc`` with the row numbers of its message made relative to a whole input whose rows
    ``offset..`` it concerns."""
    if offset == 0:
        return exc
    return type(exc)(_ROW.sub(lambda m: f"row {int(m.group(1)) + offset}", str(exc)))


def as_codes(codes, bits: int | None = None, name: str = "codes") -> tuple[np.ndarray, int]:
    """Returns ``(array, bits)``: ``codes`` as a C-contiguous ``(N, words)`` ``uint64`` array.

    Accepted without a copy: ``uint64`` arrays (and ``int64`` ones, the same bit pattern, as
    Spark and Arrow store fingerprints), 2-D ``(N, words)`` or 1-D: one code of ``words``
    words when ``bits`` says codes are that wide (``codes[i]`` of a wider array, a single
    query), else, for codes of at most 64 bits, ``(N,)``. ``uint8`` arrays ``(N, bytes)`` in
    FAISS's layout (bit ``j`` of a code is bit ``j % 8`` of byte ``j // 8``, as
    ``np.packbits(..., bitorder="little")``) are read as the same words: in place when
    ``bytes`` is a multiple of 8, else padded (a copy); ``bits`` defaults to ``8 * bytes``.
    ``bits`` defaults to ``64 * words``. Anything else raises ``TypeError`` (dtype) or
    ``ValueError`` (shape, layout), never copies a large array behind the caller's back.
    """
    if not isinstance(codes, np.ndarray):
        if hasattr(codes, "__arrow_c_array__") or type(codes).__module__.startswith("pyarrow"):
            from .arrow import codes_from_arrow

            codes = codes_from_arrow(codes)
        else:
            codes = np.asarray(codes)
            if codes.dtype.kind in "iu" and codes.size == 0:
                codes = codes.astype(np.uint64)
    if codes.dtype == np.int64:
        codes = codes.view(np.uint64)
    if codes.dtype == np.uint8:
        codes, from_bytes = _from_bytes(codes, name)
        bits = bits if bits is not None else from_bytes
    if codes.dtype != np.uint64:
        raise TypeError(
            f"{name} must be uint64 (or int64) signature words, or uint8 bytes as FAISS stores "
            f"codes, got dtype {codes.dtype}"
        )
    if codes.ndim == 1:
        w = (bits + 63) // 64 if bits is not None else 1
        codes = codes.reshape(1, -1) if w > 1 and codes.shape[0] == w else codes.reshape(-1, 1)
    if codes.ndim != 2:
        raise ValueError(f"{name} must be 2-D (N, words), got shape {codes.shape}")
    words = codes.shape[1]
    if bits is None:
        if words == 0:
            raise ValueError(f"{name} has no words per row")
        bits = 64 * words
    if words != (bits + 63) // 64:
        raise ValueError(
            f"{name} have {words} words per row, but {bits}-bit signatures have {(bits + 63) // 64}"
        )
    if not codes.flags.c_contiguous:
        raise ValueError(
            f"{name} must be C-contiguous (use numpy.ascontiguousarray({name}), a copy)"
        )
    return codes, bits


def _from_bytes(codes: np.ndarray, name: str) -> tuple[np.ndarray, int]:
    """``uint8`` codes ``(N, bytes)`` (or one code ``(bytes,)``) as ``uint64`` words, and
    their width ``8 * bytes``."""
    if codes.ndim == 1:
        codes = codes.reshape(1, -1)
    if codes.ndim != 2:
        raise ValueError(f"{name} as bytes must be 2-D (N, bytes), got shape {codes.shape}")
    n, nbytes = codes.shape
    if nbytes == 0:
        raise ValueError(f"{name} has no bytes per row")
    if nbytes % 8:
        padded = np.zeros((n, (nbytes + 7) // 8 * 8), dtype=np.uint8)
        padded[:, :nbytes] = codes
        codes = padded
    elif not codes.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (use numpy.ascontiguousarray({name}), a copy)")
    return codes.view("<u8"), 8 * nbytes


def as_ids(ids, n: int | None = None, name: str = "ids") -> np.ndarray:
    """``ids`` as a contiguous ``int64`` array (values are checked to lie in ``0..2^32`` by the
    native code). Integer arrays of other widths are converted (ids are small)."""
    a = np.asarray(ids)
    if a.ndim == 0:
        a = a.reshape(1)
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.dtype == np.uint64 and a.size and a.max() > np.iinfo(np.int64).max:
        bad = int(np.argmax(a > np.iinfo(np.int64).max))
        raise ValueError(f"{name}[{bad}] = {a[bad]} is not in 0..2^32 (ids are uint32)")
    a = np.ascontiguousarray(a, dtype=np.int64)
    if n is not None and len(a) != n:
        raise ValueError(f"{name}: {len(a)} ids for {n} codes")
    return a
