//! Input formats: the readers of vectors, texts and signatures.
//!
//! The crate's own file format (signature matrices and indexes) is in [`crate::persist`];
//! atomic writes and locks are in [`crate::fs`].
//!
//! Inputs ([`InputFormat`] picks one by extension or name):
//!
//! - vectors: dense [`.npy`](read_npy_dense), [`.npz`](read_npz) (a SciPy sparse matrix or one
//!   dense array of `np.savez`), [SVMlight / libsvm](read_svmlight), [MatrixMarket](read_mtx),
//!   [`.fvecs` / `.ivecs` / `.bvecs`](vecs::read_vecs), all through [`read_vectors`];
//! - text: plain lines, JSON Lines and CSV / TSV, through [`documents()`] and
//!   [`read_documents`];
//! - signatures: `.npy` arrays of `uint64` ([`write_signatures_npy`],
//!   [`read_signatures_npy`]) besides the crate's own format
//!   ([`save_signatures`](crate::persist::save_signatures)).
//!
//! Two readers sit behind cargo features, both on by default: `.npz` archives (`npz`, which
//! brings in the `zip` crate) and JSON Lines / CSV / TSV documents (`documents`: `serde_json`
//! and `csv`). Built without them, [`read_vectors`] and [`documents()`] return
//! [`Error::Unsupported`](crate::Error::Unsupported) for those formats, naming the feature;
//! every other format, `.npy` included, needs no feature.
//!
//! Every reader reports bad input as a typed error naming the file and the line, row or byte
//! ([`Error::Parse`](crate::Error::Parse) for text, [`Error::Format`](crate::Error::Format)
//! for binary files), never a panic; line-oriented readers can skip bad lines instead
//! ([`OnBadLine`]). A size claimed by a header is checked against the file before anything is
//! allocated, a compressed archive may decompress only so far ([`Limits`]), and every vector
//! format but `.npz` also reads standard input (the path `-`) or any reader
//! ([`read_vectors_from`]). `tests/bad_input.rs` holds the readers to this with thousands of
//! damaged and hostile inputs.

pub mod csr;
pub mod documents;
pub mod float;
pub mod input;
pub mod limits;
pub mod lines;
pub mod mtx;
pub mod npy;
pub mod ragged;
pub mod source;
pub mod svmlight;
pub mod vecs;

pub use documents::{
    Document, Documents, TextOptions, check_id, documents, read_documents, read_documents_with_ids,
};
pub use input::{
    InputFormat, VectorInput, VectorOptions, Vectors, read_vectors, read_vectors_from,
};
pub use limits::Limits;
pub use lines::{BadLines, OnBadLine};
pub use mtx::{MatrixMarket, read_mtx, read_mtx_from};
pub use npy::{
    Csr, read_npy_dense, read_npy_dense_from, read_signatures_npy, read_signatures_npy_from,
    stage_signatures_npy, write_signatures_npy,
};
#[cfg(feature = "npz")]
pub use npy::{read_npz, read_npz_csr};
pub use source::is_stdin;
pub use svmlight::{IndexBase, Svmlight, SvmlightOptions, read_svmlight, read_svmlight_from};
pub use vecs::{read_vecs, read_vecs_from};
