//! Choosing an input format and reading vectors of any format.
//!
//! [`InputFormat`] names every input the library reads. [`InputFormat::from_path`] picks it
//! from the file extension; [`FromStr`] parses a name given explicitly
//! (e.g. a `--format` option), which overrides the extension:
//!
//! | format | extensions | names | read by |
//! |---|---|---|---|
//! | [`Npy`](InputFormat::Npy) | `.npy` | `npy` | [`read_npy_dense`] |
//! | [`Npz`](InputFormat::Npz) | `.npz` | `npz` | [`read_npz_csr`] |
//! | [`Svmlight`](InputFormat::Svmlight) | `.svm`, `.svmlight`, `.libsvm` | `svmlight`, `libsvm`, `svm` | [`read_svmlight`] |
//! | [`MatrixMarket`](InputFormat::MatrixMarket) | `.mtx` | `mtx`, `matrix-market` | [`read_mtx`](super::read_mtx) |
//! | [`Fvecs`](InputFormat::Fvecs), [`Ivecs`](InputFormat::Ivecs), [`Bvecs`](InputFormat::Bvecs) | `.fvecs`, `.ivecs`, `.bvecs` | same | [`read_vecs`] |
//! | [`Text`](InputFormat::Text) | `.txt` | `text`, `txt`, `lines` | [`documents`](super::documents()) |
//! | [`JsonLines`](InputFormat::JsonLines) | `.jsonl`, `.ndjson` | `jsonl`, `json-lines`, `ndjson` | [`documents`](super::documents()) |
//! | [`Csv`](InputFormat::Csv) | `.csv` | `csv` | [`documents`](super::documents()) |
//! | [`Tsv`](InputFormat::Tsv) | `.tsv` | `tsv` | [`documents`](super::documents()) |
//!
//! Extensions and names are case-insensitive. The first seven are vector formats
//! ([`read_vectors`]); the last four are text formats, one document per line or record.

use std::path::Path;
use std::str::FromStr;

use ndarray::Array2;

use super::lines::{BadLines, OnBadLine};
use super::npy::{Csr, read_npy_dense, read_npz_csr};
use super::svmlight::{IndexBase, SvmlightOptions, read_svmlight};
use super::vecs::{VecsKind, read_vecs};
use crate::error::{Error, Result};
use crate::signature::SignatureMatrix;
use crate::signers::{Signer, SignerExt};

/// Every input format the library reads. See the [module docs](self) for extensions and names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputFormat {
    /// NumPy `.npy`, a dense `N × D` array of `float32` or `float64`.
    Npy,
    /// SciPy sparse `.npz` (`scipy.sparse.save_npz`).
    Npz,
    /// SVMlight / libsvm text.
    Svmlight,
    /// MatrixMarket `.mtx` (coordinate: sparse; array: dense).
    MatrixMarket,
    /// Texmex `.fvecs` (`f32`).
    Fvecs,
    /// Texmex `.ivecs` (`i32`).
    Ivecs,
    /// Texmex `.bvecs` (`u8`).
    Bvecs,
    /// Plain text, one document per line.
    Text,
    /// JSON Lines, the document in a named field of each object.
    JsonLines,
    /// CSV (RFC 4180) with a header row, the document in a named column.
    Csv,
    /// Like [`Csv`](InputFormat::Csv), separated by tabs.
    Tsv,
}

impl InputFormat {
    /// Every format, in the order of the module table.
    pub const ALL: [InputFormat; 11] = [
        InputFormat::Npy,
        InputFormat::Npz,
        InputFormat::Svmlight,
        InputFormat::MatrixMarket,
        InputFormat::Fvecs,
        InputFormat::Ivecs,
        InputFormat::Bvecs,
        InputFormat::Text,
        InputFormat::JsonLines,
        InputFormat::Csv,
        InputFormat::Tsv,
    ];

    /// The canonical name (what [`Display`](std::fmt::Display) prints and
    /// [`FromStr`] accepts).
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Npy => "npy",
            InputFormat::Npz => "npz",
            InputFormat::Svmlight => "svmlight",
            InputFormat::MatrixMarket => "mtx",
            InputFormat::Fvecs => "fvecs",
            InputFormat::Ivecs => "ivecs",
            InputFormat::Bvecs => "bvecs",
            InputFormat::Text => "text",
            InputFormat::JsonLines => "jsonl",
            InputFormat::Csv => "csv",
            InputFormat::Tsv => "tsv",
        }
    }

    /// The format for a file extension (without the dot, any case), if known.
    pub fn from_extension(ext: &str) -> Option<Self> {
        Some(match ext.to_ascii_lowercase().as_str() {
            "npy" => InputFormat::Npy,
            "npz" => InputFormat::Npz,
            "svm" | "svmlight" | "libsvm" => InputFormat::Svmlight,
            "mtx" => InputFormat::MatrixMarket,
            "fvecs" => InputFormat::Fvecs,
            "ivecs" => InputFormat::Ivecs,
            "bvecs" => InputFormat::Bvecs,
            "txt" => InputFormat::Text,
            "jsonl" | "ndjson" => InputFormat::JsonLines,
            "csv" => InputFormat::Csv,
            "tsv" => InputFormat::Tsv,
            _ => return None,
        })
    }

    /// The format of `path` from its extension; an error naming the file and the known
    /// formats if the extension is missing or unknown.
    pub fn from_path(path: &Path) -> Result<Self> {
        path.extension()
            .and_then(|e| e.to_str())
            .and_then(Self::from_extension)
            .ok_or_else(|| {
                Error::Format {
                    path: path.to_path_buf(),
                    reason: format!(
                        "cannot tell the input format from the file extension; name it explicitly (one of: {})",
                        Self::names()
                    ),
                }
            })
    }

    /// True for the text formats ([`Text`](InputFormat::Text), [`JsonLines`](InputFormat::JsonLines),
    /// [`Csv`](InputFormat::Csv), [`Tsv`](InputFormat::Tsv)), false for vector formats.
    pub fn is_text(self) -> bool {
        matches!(
            self,
            InputFormat::Text | InputFormat::JsonLines | InputFormat::Csv | InputFormat::Tsv
        )
    }

    /// The canonical names, comma-separated, for messages and help texts.
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }
}

impl std::fmt::Display for InputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for InputFormat {
    type Err = Error;

    /// A canonical name, an alias (`libsvm`, `svm`, `matrix-market`, `txt`, `lines`,
    /// `json-lines`, `ndjson`) or an extension; any case, a leading dot allowed.
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().trim_start_matches('.').to_ascii_lowercase();
        match t.as_str() {
            "matrix-market" | "matrixmarket" => Ok(InputFormat::MatrixMarket),
            "text" | "lines" => Ok(InputFormat::Text),
            "json-lines" | "jsonlines" => Ok(InputFormat::JsonLines),
            _ => Self::from_extension(&t).ok_or_else(|| {
                Error::param(
                    "format",
                    format!("unknown input format `{s}` (one of: {})", Self::names()),
                )
            }),
        }
    }
}

/// A matrix of input vectors, dense or sparse.
#[derive(Clone, Debug)]
pub enum Vectors {
    /// A dense `N × D` matrix.
    Dense(Array2<f32>),
    /// A sparse CSR matrix, rows sorted.
    Sparse(Csr),
}

impl Vectors {
    /// Number of vectors.
    pub fn rows(&self) -> usize {
        match self {
            Vectors::Dense(a) => a.nrows(),
            Vectors::Sparse(m) => m.rows(),
        }
    }

    /// Dimension (number of columns).
    pub fn cols(&self) -> usize {
        match self {
            Vectors::Dense(a) => a.ncols(),
            Vectors::Sparse(m) => m.cols(),
        }
    }

    /// Signs every vector with `signer` ([`Signer::sign_dense`] or [`SignerExt::sign_csr`]).
    pub fn sign<S: Signer + ?Sized>(&self, signer: &S) -> Result<SignatureMatrix> {
        match self {
            Vectors::Dense(a) => signer.sign_dense(a),
            Vectors::Sparse(m) => signer.sign_csr(m.view()),
        }
    }
}

/// Options of [`read_vectors`].
#[derive(Clone, Debug, Default)]
pub struct VectorOptions {
    /// Index base of SVMlight files (ignored by other formats).
    pub base: IndexBase,
    /// Number of columns of SVMlight files; `None` takes the largest index + 1.
    pub dim: Option<usize>,
    /// What line-oriented readers (SVMlight, MatrixMarket entries) do with a bad line.
    pub on_bad: OnBadLine,
}

/// Vectors read by [`read_vectors`], with what the format carries besides.
#[derive(Debug)]
pub struct VectorInput {
    /// The vectors.
    pub vectors: Vectors,
    /// SVMlight labels, one per row.
    pub labels: Option<Vec<f64>>,
    /// SVMlight: the line number (1-based) of each row.
    pub lines: Option<Vec<usize>>,
    /// Lines skipped under [`OnBadLine::Skip`].
    pub bad: BadLines,
}

/// Reads vectors of any vector format. A text format is an [`Error::InvalidParameter`]:
/// documents are read by [`documents`](super::documents()) and featurised by
/// [`text`](crate::text).
pub fn read_vectors(path: &Path, format: InputFormat, opts: &VectorOptions) -> Result<VectorInput> {
    let plain = |vectors| VectorInput {
        vectors,
        labels: None,
        lines: None,
        bad: BadLines::default(),
    };
    Ok(match format {
        InputFormat::Npy => plain(Vectors::Dense(read_npy_dense(path)?)),
        InputFormat::Npz => plain(Vectors::Sparse(read_npz_csr(path)?)),
        InputFormat::Fvecs => plain(Vectors::Dense(read_vecs(path, VecsKind::F32)?)),
        InputFormat::Ivecs => plain(Vectors::Dense(read_vecs(path, VecsKind::I32)?)),
        InputFormat::Bvecs => plain(Vectors::Dense(read_vecs(path, VecsKind::U8)?)),
        InputFormat::MatrixMarket => {
            let m = super::mtx::read_mtx(path, opts.on_bad)?;
            VectorInput {
                bad: m.bad,
                ..plain(m.matrix)
            }
        }
        InputFormat::Svmlight => {
            let s = read_svmlight(
                path,
                &SvmlightOptions {
                    base: opts.base,
                    dim: opts.dim,
                    on_bad: opts.on_bad,
                },
            )?;
            VectorInput {
                vectors: Vectors::Sparse(s.matrix),
                labels: Some(s.labels),
                lines: Some(s.lines),
                bad: s.bad,
            }
        }
        InputFormat::Text | InputFormat::JsonLines | InputFormat::Csv | InputFormat::Tsv => {
            return Err(Error::param(
                "format",
                format!("`{format}` is a text format: read it as documents, not vectors"),
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_extensions_map() {
        for f in InputFormat::ALL {
            assert_eq!(f.name().parse::<InputFormat>().unwrap(), f);
            assert_eq!(f.to_string().parse::<InputFormat>().unwrap(), f);
        }
        assert_eq!(
            InputFormat::from_path(Path::new("a/b.LIBSVM")).unwrap(),
            InputFormat::Svmlight
        );
        assert_eq!("TSV".parse::<InputFormat>().unwrap(), InputFormat::Tsv);
        assert_eq!(
            ".ndjson".parse::<InputFormat>().unwrap(),
            InputFormat::JsonLines
        );
        assert!(InputFormat::from_path(Path::new("data.bin")).is_err());
        assert!(InputFormat::from_path(Path::new("noext")).is_err());
        assert!("parquet".parse::<InputFormat>().is_err());
        assert_eq!(InputFormat::ALL.iter().filter(|f| f.is_text()).count(), 4);
    }
}
