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
    Spark and Arrow store fingerprints), 2-D ``(N, words)`` or, for codes of at most 64 bits,
    1-D ``(N,)``. ``bits`` defaults to ``64 * words``. Anything else raises ``TypeError``
    (dtype) or ``ValueError`` (shape, layout), never copies a large array behind the caller's
    back.
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
    if codes.dtype != np.uint64:
        raise TypeError(
            f"{name} must be uint64 (or int64) signature words, got dtype {codes.dtype}"
        )
    if codes.ndim == 1:
        codes = codes.reshape(-1, 1)
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
