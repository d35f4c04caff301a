"""Estimates and planners against SciPy's binomial and beta distributions (the oracles), and
vectorisation against the scalar calls."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import simlsh


def test_angle_and_cosine_broadcast_and_keep_scalars():
    h = np.array([[0, 1, 32], [64, 3, 7]])
    np.testing.assert_allclose(simlsh.angle(h, 64), np.pi * h / 64, rtol=1e-15)
    np.testing.assert_allclose(simlsh.cosine(h, 64), np.cos(np.pi * h / 64), atol=1e-15)
    assert isinstance(simlsh.cosine(3, 64), float)
    assert simlsh.cosine([1, 2], [64, 128]).tolist() == [simlsh.cosine(1, 64), simlsh.cosine(2, 128)]


def test_clopper_pearson_and_wilson_intervals_equal_their_formulas():
    h = np.arange(0, 65)
    e = simlsh.estimate(h, 64, level=0.95)
    lo = np.where(h == 0, 0.0, stats.beta.ppf(0.025, h, 64 - h + 1))
    hi = np.where(h == 64, 1.0, stats.beta.ppf(0.975, h + 1, 64 - h))
    np.testing.assert_allclose(e.p_lo, lo, atol=1e-12)
    np.testing.assert_allclose(e.p_hi, hi, atol=1e-12)
    np.testing.assert_allclose(e.angle_lo, np.pi * lo, atol=1e-12)
    np.testing.assert_allclose(e.cosine_lo, np.cos(np.pi * hi), atol=1e-12)
    w = simlsh.estimate(h, 64, level=0.9, method="wilson")
    z = stats.norm.ppf(0.95)
    p = h / 64
    centre = (p + z**2 / 128) / (1 + z**2 / 64)
    half = z * np.sqrt(p * (1 - p) / 64 + z**2 / (4 * 64**2)) / (1 + z**2 / 64)
    np.testing.assert_allclose(w.p_lo, centre - half, atol=1e-12)
    np.testing.assert_allclose(w.p_hi, centre + half, atol=1e-12)


def test_recall_is_the_binomial_cdf_and_planners_are_consistent():
    c = np.array([0.999, 0.99, 0.95, 0.9])
    r = simlsh.recall_at(64, 3, c)
    np.testing.assert_allclose(r, stats.binom.cdf(3, 64, np.arccos(c) / np.pi), rtol=1e-10)
    np.testing.assert_allclose(simlsh.expected_hamming(c, 64), 64 * np.arccos(c) / np.pi, rtol=1e-12)
    m = simlsh.max_hamming_for_cosine(0.95, [64, 128, 256])
    for h, f in zip(m.tolist(), [64, 128, 256]):
        assert simlsh.cosine(h, f) >= 0.95 > simlsh.cosine(h + 1, f)
    plan = simlsh.plan_radius(0.9, bits=128, rule="target-recall", target_recall=0.95)
    k = plan["radius"]
    assert simlsh.recall_at(128, k, 0.9) >= 0.95 > simlsh.recall_at(128, k - 1, 0.9)
    rows = plan["rows"]
    assert rows["radius"].tolist() == list(range(len(rows["radius"])))
    np.testing.assert_allclose(rows["recall_at_threshold"][k], simlsh.recall_at(128, k, 0.9))
    b = simlsh.plan_bits(angle_degrees=3.0, at_cosine=0.8)
    a, _ = simlsh.expected_half_width([b["bits"], b["bits"] - 1], 0.8)
    assert a[0] <= 3.0 < a[1] and b["words"] == (b["bits"] + 63) // 64


def test_bad_arguments_name_the_element():
    with pytest.raises(ValueError, match="element 1"):
        simlsh.estimate([3, 70], 64)
    with pytest.raises(ValueError, match="level"):
        simlsh.estimate(3, 64, level=1.5)
    with pytest.raises(ValueError, match="method"):
        simlsh.estimate(3, 64, method="exact")
    with pytest.raises(ValueError, match="non-negative"):
        simlsh.cosine(-1, 64)
    with pytest.raises(ValueError, match="exactly one target"):
        simlsh.plan_bits()


def test_defaults_are_the_librarys():
    """Python states no default of its own: leaving an argument out gives what the library's
    default (exported by ``_simlsh.defaults()``) gives, and the docstrings quote those values."""
    from simlsh import _simlsh

    d = _simlsh.defaults()
    level, method = d["level"], d["interval_method"]
    assert (level, method) == (0.95, "clopper-pearson")
    h = np.arange(0, 65)
    e, explicit = simlsh.estimate(h, 64), simlsh.estimate(h, 64, level=level, method=method)
    for a, b in zip(e, explicit):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(e.p_lo, simlsh.estimate(h, 64, level=0.9).p_lo)
    assert not np.array_equal(e.p_lo, simlsh.estimate(h, 64, method="wilson").p_lo)
    c = np.array([0.0, 0.5, 0.9])
    for a, b in zip(simlsh.expected_half_width(256, c), simlsh.expected_half_width(256, c, level=level, method=method)):
        np.testing.assert_array_equal(a, b)
    assert simlsh.plan_bits(cosine_half_width=0.05) == simlsh.plan_bits(cosine_half_width=0.05, level=level, method=method)
    bits, rule = d["radius_bits"], d["radius_rule"]
    assert (bits, rule) == (64, "expected-distance")
    plan, explicit = simlsh.plan_radius(0.9), simlsh.plan_radius(0.9, bits=bits, rule=rule)
    assert plan["bits"] == bits and plan["radius"] == explicit["radius"] == round(bits * np.arccos(0.9) / np.pi)
    for k in plan["rows"]:
        np.testing.assert_array_equal(plan["rows"][k], explicit["rows"][k])
    # The docstrings quote the library's values.
    for fn in (simlsh.estimate, simlsh.plan_radius):
        doc = " ".join(fn.__doc__.split())
        assert f"default the library's, {level if fn is simlsh.estimate else bits})" in doc, fn
    assert method in simlsh.estimate.__doc__ and rule in simlsh.plan_radius.__doc__


def test_radius_rules_take_their_arguments():
    with pytest.raises(ValueError, match=r"`fixed` with these arguments \(expected-distance; target-recall with"):
        simlsh.plan_radius(0.9, rule="fixed")
    with pytest.raises(ValueError, match="`expected-distance` with these arguments"):
        simlsh.plan_radius(0.9, target_recall=0.9)
    with pytest.raises(ValueError, match="give either cosines or max_angle"):
        simlsh.plan_radius(0.9, cosines=[0.95], max_angle=1.0)
    assert simlsh.plan_radius(0.9, bits=128, rule="fixed", radius=5)["radius"] == 5
