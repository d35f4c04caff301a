//! Estimates and planners, vectorised over 1-D arrays (the Python layer broadcasts).

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;
use simlsh::estimate::{
    self, BitsPlanner, ErrorTarget, IntervalMethod, PairDistribution, RadiusPlanner, RadiusRule,
};

use crate::arrays::contiguous;
use crate::errors::{IntoPy, value_error};

/// Applies `f` elementwise to two equal-length arrays, in parallel; the first error (by
/// position) is raised, naming the element.
fn map2<A: Copy + Sync, B: Copy + Sync, T: Send>(
    py: Python<'_>,
    a: &[A],
    b: &[B],
    f: impl Fn(A, B) -> simlsh::Result<T> + Sync + Send,
) -> PyResult<Vec<T>> {
    if a.len() != b.len() {
        return Err(value_error("arrays of different lengths"));
    }
    py.detach(|| {
        (0..a.len())
            .into_par_iter()
            .map(|k| f(a[k], b[k]).map_err(|e| (k, e)))
            .collect::<Result<Vec<T>, _>>()
    })
    .map_err(|(k, e)| value_error(format!("element {k}: {e}")))
}

type F64s<'py> = Bound<'py, PyArray1<f64>>;

/// `g(h, f)` of each distance `h` (checked against its width `f`).
fn of_distance<'py>(
    py: Python<'py>,
    h: PyReadonlyArray1<'py, u64>,
    f: PyReadonlyArray1<'py, u64>,
    g: fn(u64, u64) -> f64,
) -> PyResult<F64s<'py>> {
    let v = map2(py, contiguous(&h, "h")?, contiguous(&f, "f")?, |h, f| {
        estimate::check_distance(h, f).map(|()| g(h, f))
    })?;
    Ok(v.into_pyarray(py))
}

/// θ̂ = π·h/f, radians.
#[pyfunction]
pub fn angle<'py>(
    py: Python<'py>,
    h: PyReadonlyArray1<'py, u64>,
    f: PyReadonlyArray1<'py, u64>,
) -> PyResult<F64s<'py>> {
    of_distance(py, h, f, estimate::angle)
}

/// ĉ = cos(π·h/f).
#[pyfunction]
pub fn cosine<'py>(
    py: Python<'py>,
    h: PyReadonlyArray1<'py, u64>,
    f: PyReadonlyArray1<'py, u64>,
) -> PyResult<F64s<'py>> {
    of_distance(py, h, f, estimate::cosine)
}

/// `g(c, f)` of each cosine `c` with its width `f`.
fn of_cosine<'py, T: numpy::Element + Send>(
    py: Python<'py>,
    c: PyReadonlyArray1<'py, f64>,
    f: PyReadonlyArray1<'py, u64>,
    g: fn(f64, u64) -> simlsh::Result<T>,
) -> PyResult<Bound<'py, PyArray1<T>>> {
    Ok(map2(py, contiguous(&c, "cosine")?, contiguous(&f, "bits")?, g)?.into_pyarray(py))
}

/// Expected Hamming distance f·acos(c)/π.
#[pyfunction]
pub fn expected_hamming<'py>(
    py: Python<'py>,
    c: PyReadonlyArray1<'py, f64>,
    f: PyReadonlyArray1<'py, u64>,
) -> PyResult<F64s<'py>> {
    of_cosine(py, c, f, estimate::expected_hamming)
}

/// The largest h whose estimated cosine is at least c.
#[pyfunction]
pub fn max_hamming_for_cosine<'py>(
    py: Python<'py>,
    c: PyReadonlyArray1<'py, f64>,
    f: PyReadonlyArray1<'py, u64>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    of_cosine(py, c, f, estimate::max_hamming_for_cosine)
}

/// P(h ≤ radius) for a pair of true cosine c with f bits.
#[pyfunction]
pub fn recall_at<'py>(
    py: Python<'py>,
    bits: PyReadonlyArray1<'py, u64>,
    radius: PyReadonlyArray1<'py, u64>,
    c: PyReadonlyArray1<'py, f64>,
) -> PyResult<F64s<'py>> {
    let (b, r) = (contiguous(&bits, "bits")?, contiguous(&radius, "radius")?);
    let br = map2(py, b, r, |b, r| Ok((b, r)))?;
    let v = map2(py, &br, contiguous(&c, "cosine")?, |(b, r), c| {
        estimate::recall_at(b, r, c)
    })?;
    Ok(v.into_pyarray(py))
}

/// One column of a radius plan's rows.
type PlanColumn = fn(&estimate::PlanRow) -> f64;

/// The level and method of an interval (the library's defaults for `None`).
fn interval(level: Option<f64>, method: Option<&str>) -> PyResult<(f64, IntervalMethod)> {
    let (level, m) = (
        level.unwrap_or(estimate::DEFAULT_LEVEL),
        method.map(str::parse),
    );
    Ok((level, m.transpose().py()?.unwrap_or_default()))
}

/// Estimates with confidence intervals: a dict of arrays (`angle`, `cosine`, `p_lo`, `p_hi`,
/// `angle_lo`, `angle_hi`, `cosine_lo`, `cosine_hi`).
#[pyfunction]
#[pyo3(signature = (h, f, level = None, method = None))]
pub fn estimate_arrays<'py>(
    py: Python<'py>,
    h: PyReadonlyArray1<'py, u64>,
    f: PyReadonlyArray1<'py, u64>,
    level: Option<f64>,
    method: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let (level, m) = interval(level, method)?;
    let es = map2(py, contiguous(&h, "h")?, contiguous(&f, "f")?, |h, f| {
        estimate::estimate(h, f, level, m)
    })?;
    let d = PyDict::new(py);
    let col = |g: fn(&estimate::Estimate) -> f64| -> Vec<f64> { es.iter().map(g).collect() };
    d.set_item("angle", col(|e| e.angle).into_pyarray(py))?;
    d.set_item("cosine", col(|e| e.cosine).into_pyarray(py))?;
    d.set_item("p_lo", col(|e| e.p_interval.lo).into_pyarray(py))?;
    d.set_item("p_hi", col(|e| e.p_interval.hi).into_pyarray(py))?;
    d.set_item("angle_lo", col(|e| e.angle_interval.lo).into_pyarray(py))?;
    d.set_item("angle_hi", col(|e| e.angle_interval.hi).into_pyarray(py))?;
    d.set_item("cosine_lo", col(|e| e.cosine_interval.lo).into_pyarray(py))?;
    d.set_item("cosine_hi", col(|e| e.cosine_interval.hi).into_pyarray(py))?;
    Ok(d)
}

/// Expected half-widths `(angle_degrees, cosine)` of the intervals with f bits at cosine c.
#[pyfunction]
#[pyo3(signature = (bits, c, level = None, method = None))]
pub fn expected_half_width<'py>(
    py: Python<'py>,
    bits: PyReadonlyArray1<'py, u64>,
    c: PyReadonlyArray1<'py, f64>,
    level: Option<f64>,
    method: Option<&str>,
) -> PyResult<(F64s<'py>, F64s<'py>)> {
    let (level, m) = interval(level, method)?;
    let hw = map2(
        py,
        contiguous(&bits, "bits")?,
        contiguous(&c, "cosine")?,
        |b, c| estimate::expected_half_width(b, c, level, m),
    )?;
    let a: Vec<f64> = hw.iter().map(|h| h.angle_degrees).collect();
    let c: Vec<f64> = hw.iter().map(|h| h.cosine).collect();
    Ok((a.into_pyarray(py), c.into_pyarray(py)))
}

/// The radius planner: the Hamming radius for a cosine threshold with f bits, and for every
/// radius its recall, precision and F1 under a distribution of pairs.
#[pyfunction]
#[pyo3(signature = (threshold, bits = None, rule = None, target_recall = None,
    radius = None, max_angle = None, true_fraction = None, cosines = None))]
#[allow(clippy::too_many_arguments)]
pub fn plan_radius<'py>(
    py: Python<'py>,
    threshold: f64,
    bits: Option<u64>,
    rule: Option<&str>,
    target_recall: Option<f64>,
    radius: Option<u64>,
    max_angle: Option<f64>,
    true_fraction: Option<f64>,
    cosines: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut p = RadiusPlanner::new(threshold)
        .rule(RadiusRule::from_args(rule, target_recall, radius).py()?)
        .pairs(PairDistribution::from_args(cosines, max_angle, true_fraction).py()?);
    if let Some(f) = bits {
        p = p.bits(f);
    }
    let plan = py.detach(|| p.plan()).py()?;
    let d = PyDict::new(py);
    d.set_item("threshold", plan.threshold)?;
    d.set_item("bits", plan.bits)?;
    d.set_item("radius", plan.radius)?;
    d.set_item("expected_distance", plan.expected_distance)?;
    d.set_item("true_fraction", plan.true_fraction)?;
    let rows = PyDict::new(py);
    let radii: Vec<u64> = plan.rows.iter().map(|r| r.radius).collect();
    rows.set_item("radius", radii.into_pyarray(py))?;
    let cols: [(&str, PlanColumn); 5] = [
        ("recall_at_threshold", |r| r.recall_at_threshold),
        ("recall", |r| r.recall),
        ("precision", |r| r.precision),
        ("false_positive_rate", |r| r.false_positive_rate),
        ("f1", |r| r.f1),
    ];
    for (name, g) in cols {
        let col: Vec<f64> = plan.rows.iter().map(g).collect();
        rows.set_item(name, col.into_pyarray(py))?;
    }
    d.set_item("rows", rows)?;
    Ok(d)
}

/// The bits planner: the smallest f whose expected interval half-width (angle in degrees, or
/// cosine) is at most the target.
#[pyfunction]
#[pyo3(signature = (angle_degrees = None, cosine_half_width = None, at_cosine = None,
    level = None, method = None, max_bits = None))]
pub fn plan_bits<'py>(
    py: Python<'py>,
    angle_degrees: Option<f64>,
    cosine_half_width: Option<f64>,
    at_cosine: Option<f64>,
    level: Option<f64>,
    method: Option<&str>,
    max_bits: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let (level, m) = interval(level, method)?;
    let mut p = BitsPlanner::new(ErrorTarget::one_of(angle_degrees, cosine_half_width).py()?)
        .level(level)
        .method(m);
    if let Some(c) = at_cosine {
        p = p.at_cosine(c);
    }
    if let Some(m) = max_bits {
        p = p.max_bits(m);
    }
    let plan = py.detach(|| p.plan()).py()?;
    let d = PyDict::new(py);
    d.set_item("bits", plan.bits)?;
    d.set_item("words", plan.words)?;
    d.set_item("cosine", plan.cosine)?;
    d.set_item("half_width_angle_degrees", plan.half_width.angle_degrees)?;
    d.set_item("half_width_cosine", plan.half_width.cosine)?;
    Ok(d)
}
