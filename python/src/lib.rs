//! The native module of the `simlsh` Python package (`simlsh._simlsh`): the library's
//! signers, indexes, joins, estimates and text front-end over NumPy arrays. The public Python
//! API (keyword arguments, input dispatch, pickling, scikit-learn) lives in the pure-Python
//! modules of `simlsh`; this module does the work, off the GIL, on rayon's threads.

mod arrays;
mod errors;
mod estimate;
mod index;
mod join;
mod partition;
mod rerank;
mod scheme;
mod signer;
mod store;
mod text;
mod threads;
mod verify;

use pyo3::prelude::*;

#[pymodule]
fn _simlsh(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FormatError", m.py().get_type::<errors::FormatError>())?;
    m.add_class::<signer::PySigner>()?;
    m.add_class::<text::PyTokenizer>()?;
    m.add_class::<text::PyIdf>()?;
    m.add_class::<index::PyIndex>()?;
    m.add_class::<store::PyStore>()?;
    m.add_class::<scheme::PyScheme>()?;
    m.add_class::<index::PyFileLock>()?;
    m.add_function(wrap_pyfunction!(join::self_join, m)?)?;
    m.add_function(wrap_pyfunction!(join::clusters, m)?)?;
    m.add_function(wrap_pyfunction!(join::knn_graph, m)?)?;
    m.add_function(wrap_pyfunction!(verify::banded_join, m)?)?;
    m.add_function(wrap_pyfunction!(verify::verified_join, m)?)?;
    m.add_function(wrap_pyfunction!(verify::cosine_join, m)?)?;
    m.add_function(wrap_pyfunction!(rerank::rerank, m)?)?;
    m.add_function(wrap_pyfunction!(scheme::plan_join, m)?)?;
    m.add_function(wrap_pyfunction!(signer::default_signer, m)?)?;
    m.add_function(wrap_pyfunction!(signer::signer_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(signer::canonical_csr, m)?)?;
    m.add_function(wrap_pyfunction!(scheme::defaults, m)?)?;
    m.add_function(wrap_pyfunction!(scheme::feature_sample_step, m)?)?;
    m.add_function(wrap_pyfunction!(scheme::mean_features, m)?)?;
    m.add_function(wrap_pyfunction!(partition::row_hashes, m)?)?;
    m.add_function(wrap_pyfunction!(partition::sign_text_counts, m)?)?;
    m.add_function(wrap_pyfunction!(partition::cosines_text, m)?)?;
    m.add_function(wrap_pyfunction!(partition::cosines, m)?)?;
    m.add_function(wrap_pyfunction!(estimate::angle, m)?)?;
    m.add_function(wrap_pyfunction!(estimate::cosine, m)?)?;
    m.add_function(wrap_pyfunction!(estimate::expected_hamming, m)?)?;
    m.add_function(wrap_pyfunction!(estimate::max_hamming_for_cosine, m)?)?;
    m.add_function(wrap_pyfunction!(estimate::recall_at, m)?)?;
    m.add_function(wrap_pyfunction!(estimate::estimate_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(estimate::expected_half_width, m)?)?;
    m.add_function(wrap_pyfunction!(estimate::plan_radius, m)?)?;
    m.add_function(wrap_pyfunction!(estimate::plan_bits, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
