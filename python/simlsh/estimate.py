"""Estimates and planners, vectorised over NumPy arrays (inputs broadcast; scalars in give
scalars out).

A Hamming distance ``h`` between ``f``-bit signatures estimates the angle ``theta = pi*h/f``
and the cosine ``cos(pi*h/f)`` (Charikar 2002), with exact binomial confidence intervals.

>>> import simlsh
>>> round(simlsh.cosine(3, 64), 4)
0.9892
>>> e = simlsh.estimate([0, 3, 32], 64)
>>> e.cosine.round(3).tolist()
[1.0, 0.989, 0.0]
>>> simlsh.plan_radius(0.95, bits=64)["radius"]
6
"""

from __future__ import annotations

from typing import Any, NamedTuple
from collections.abc import Sequence

import numpy as np

from . import _simlsh

__all__ = [
    "angle", "cosine", "estimate", "Estimate", "expected_hamming", "max_hamming_for_cosine",
    "recall_at", "expected_half_width", "plan_radius", "plan_bits",
]


def _vectorise(fn, dtypes, *args):
    """Broadcasts ``args``, converts each to its dtype, calls ``fn`` on flat contiguous arrays
    and reshapes the result(s); 0-d inputs give Python scalars."""
    arrays = []
    for a, dt in zip(args, dtypes):
        x = np.asarray(a)
        if dt == np.uint64:
            if x.dtype.kind == "f" and not np.all(np.isfinite(x) & (x == np.round(x))):
                raise ValueError("expected integers")
            if x.size and np.any(x < 0):
                raise ValueError("expected non-negative integers")
        arrays.append(x.astype(dt, copy=False))
    b = np.broadcast_arrays(*arrays)
    shape = b[0].shape
    flat = [np.ascontiguousarray(x.ravel()) for x in b]
    out = fn(*flat)

    def shaped(r):
        r = np.asarray(r).reshape(shape)
        return r.item() if r.ndim == 0 else r

    if isinstance(out, tuple):
        return tuple(shaped(r) for r in out)
    if isinstance(out, dict):
        return {k: shaped(v) for k, v in out.items()}
    return shaped(out)


def angle(h, f):
    """The angle estimate ``pi * h / f`` (radians). ``ValueError`` unless ``0 <= h <= f`` and
    ``f >= 1``."""
    return _vectorise(_simlsh.angle, (np.uint64, np.uint64), h, f)


def cosine(h, f):
    """The cosine estimate ``cos(pi * h / f)``. ``ValueError`` unless ``0 <= h <= f`` and
    ``f >= 1``."""
    return _vectorise(_simlsh.cosine, (np.uint64, np.uint64), h, f)


class Estimate(NamedTuple):
    """Estimates with confidence intervals (arrays of the broadcast shape, or scalars):
    ``p = theta / pi``, ``angle`` in radians."""

    angle: Any
    cosine: Any
    p_lo: Any
    p_hi: Any
    angle_lo: Any
    angle_hi: Any
    cosine_lo: Any
    cosine_hi: Any


def estimate(h, f, *, level: float | None = None, method: str | None = None) -> Estimate:
    """Angle and cosine from ``h`` differing bits of ``f``, with ``level`` confidence
    intervals (default the library's, 0.95) by ``method`` (``clopper-pearson``, the default,
    exact coverage at least ``level``; or ``wilson``)."""
    d = _vectorise(lambda h, f: _simlsh.estimate_arrays(h, f, level, method), (np.uint64, np.uint64), h, f)
    return Estimate(**d)


def expected_hamming(cosine, bits):
    """The expected Hamming distance ``bits * acos(cosine) / pi``."""
    return _vectorise(_simlsh.expected_hamming, (np.float64, np.uint64), cosine, bits)


def max_hamming_for_cosine(cosine, bits):
    """The largest ``h`` whose estimated cosine is at least ``cosine``."""
    return _vectorise(_simlsh.max_hamming_for_cosine, (np.float64, np.uint64), cosine, bits)


def recall_at(bits, radius, cosine):
    """The probability that a pair of true cosine ``cosine`` lies within Hamming ``radius``
    with ``bits``-bit signatures (the binomial CDF)."""
    return _vectorise(_simlsh.recall_at, (np.uint64, np.uint64, np.float64), bits, radius, cosine)


def expected_half_width(bits, cosine, *, level: float | None = None, method: str | None = None):
    """Expected half-widths ``(angle_degrees, cosine)`` of the confidence intervals with
    ``bits`` bits for a pair of true cosine ``cosine`` (``level`` and ``method`` as in
    ``estimate``)."""
    return _vectorise(
        lambda b, c: _simlsh.expected_half_width(b, c, level, method), (np.uint64, np.float64), bits, cosine
    )


def plan_radius(
    threshold: float,
    *,
    bits: int | None = None,
    rule: str | None = None,
    target_recall: float | None = None,
    radius: int | None = None,
    max_angle: float | None = None,
    true_fraction: float | None = None,
    cosines: Sequence[float] | None = None,
) -> dict[str, Any]:
    """The radius planner: the Hamming radius for a cosine ``threshold`` with ``bits`` bits
    (default the library's, 64), by ``rule`` (``expected-distance``, the default;
    ``target-recall`` with ``target_recall``; ``max-f1``; ``fixed`` with ``radius``), and
    for every radius its recall, precision and F1 when pairs' angles are uniform up to
    ``max_angle`` (default pi/2) with ``true_fraction`` of them above the threshold, or given
    by their ``cosines``. Returns a dict: ``radius``, ``expected_distance``,
    ``true_fraction``, ``rows`` (a dict of arrays by radius)."""
    return _simlsh.plan_radius(
        float(threshold), bits=None if bits is None else int(bits), rule=rule, target_recall=target_recall,
        radius=radius, max_angle=max_angle, true_fraction=true_fraction,
        cosines=None if cosines is None else [float(c) for c in cosines],
    )


def plan_bits(
    *,
    angle_degrees: float | None = None,
    cosine_half_width: float | None = None,
    at_cosine: float | None = None,
    level: float | None = None,
    method: str | None = None,
    max_bits: int | None = None,
) -> dict[str, Any]:
    """The bits planner: the smallest ``bits`` whose expected confidence-interval half-width
    is at most ``angle_degrees`` (or ``cosine_half_width``), at the true cosine ``at_cosine``
    (default the worst case, 0), with ``level`` and ``method`` as in ``estimate``. Returns a dict: ``bits``, ``words``, ``cosine``,
    ``half_width_angle_degrees``, ``half_width_cosine``."""
    return _simlsh.plan_bits(
        angle_degrees=angle_degrees, cosine_half_width=cosine_half_width, at_cosine=at_cosine,
        level=level, method=method, max_bits=max_bits,
    )
