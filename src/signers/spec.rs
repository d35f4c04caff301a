//! [`SignerSpec`]: every signer kind and its parameters as one value, with a compact text
//! form (`gaussian`, `super-bit:depth=32`, `pooled:pool=10000`) shared by the command line,
//! the Python package and Spark, the `signer.*` parameters recorded in signature and index
//! files, and [`SignerSpec::build`].
//!
//! # The text form
//!
//! `KIND[:KEY=VALUE[,KEY=VALUE]...]`, the kinds and keys of [`kinds()`]; width, seed and
//! dimension are fields of the spec, not part of the text:
//!
//! | kind | keys (default) | needs `D` |
//! |---|---|---|
//! | `gaussian` | none | yes |
//! | `super-bit` | `depth` hyperplanes orthonormalised together (`min(D, f)`) | yes |
//! | `rademacher` | none | yes |
//! | `very-sparse` | `density` of nonzero entries (`1/√D`); `nnz` expected per row (none) | yes |
//! | `hashing-trick` | none | no |
//! | `pooled` | `pool` size (10000) | no |
//! | `hashed-gaussian` | none | no |
//! | `fwht` | `buckets` `d`, a power of two (1024) | no |
//!
//! [`Display`](std::fmt::Display) writes the kind and the parameters that differ from their
//! defaults, so `parse(spec.to_string())` gives the same kind. The spec of a built signer
//! ([`AnySigner::spec`], [`SignerSpec::from_params`] of a file) is fully determined: default
//! depths and densities are written as the values used, so that it rebuilds the same matrix.
//!
//! ```
//! use simlsh::signers::{Signer, SignerSpec};
//! let spec: SignerSpec = "super-bit:depth=16".parse()?;
//! let signer = spec.bits(128).seed(7).build(Some(300))?;
//! assert_eq!(signer.info().kind, "super-bit");
//! // What a signature file records rebuilds the same signer.
//! let again = SignerSpec::from_params(&signer.info().to_params())?.build(None)?;
//! let (ids, w) = ([3, 250], [1.0, -0.5]);
//! assert_eq!(again.sign_sparse(&ids, &w)?, signer.sign_sparse(&ids, &w)?);
//! # Ok::<(), simlsh::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::fwht::{DEFAULT_BUCKETS, HASH_DESCRIPTION as FWHT_HASH};
use super::hashed_gaussian::HASH_DESCRIPTION as GAUSSIAN_HASH;
use super::hashing::HASH_DESCRIPTION;
use super::{
    AnySigner, Distribution, FwhtSigner, HashedGaussian, HashingTrick, HyperplaneSigner,
    PooledSigner, Signer, SignerInfo,
};
use crate::error::{Error, Result};
use crate::util::spec::{self as grammar, KindInfo, ParamInfo, SpecText};

/// The default pool size of [`SignerKind::Pooled`] (Van Durme & Lall's recommendation).
pub const DEFAULT_POOL: usize = 10_000;

/// A signer kind and the parameters proper to it. Its string form is the kind's name, then
/// optionally `:` and `key=value` pairs separated by commas: `gaussian`,
/// `super-bit:depth=32`, `very-sparse:density=0.01`, `pooled:pool=10000`. Parameters left out
/// take their defaults (listed by [`kinds`]).
#[derive(Clone, Debug, PartialEq, Default)]
#[non_exhaustive]
pub enum SignerKind {
    /// Explicit Gaussian hyperplanes (Charikar 2002); needs the dimension.
    Gaussian,
    /// Gaussian hyperplanes orthonormalised in batches of `depth` (super-bit LSH); needs the
    /// dimension.
    SuperBit {
        /// Batch size; `None` for `min(D, f)`.
        depth: Option<usize>,
    },
    /// Explicit `±1` hyperplanes stored as bits; needs the dimension.
    Rademacher,
    /// Very sparse `±1` hyperplanes (Li, Hastie & Church 2006); needs the dimension.
    VerySparse {
        /// Fraction of nonzero entries; `None` for `1/√D` (or the one `nnz` asks for).
        density: Option<f64>,
        /// Expected nonzeros per input row ([`HyperplaneBuilder::expected_nnz`]): raises the
        /// density so that at most 1% of such a row's projections are exactly 0.
        ///
        /// [`HyperplaneBuilder::expected_nnz`]: super::HyperplaneBuilder::expected_nnz
        nnz: Option<u64>,
    },
    /// The per-feature hashing trick (Manku et al. 2007): `±1` columns, no matrix, any
    /// dimension, tokens.
    #[default]
    HashingTrick,
    /// Hashed picks from a pool of Gaussians (Van Durme & Lall 2010): any dimension, tokens.
    Pooled {
        /// Pool size `m`.
        pool: usize,
    },
    /// Quantised Gaussian columns hashed from each feature ([`HashedGaussian`]): no matrix,
    /// any dimension, tokens, and the `1 − θ/π` law when a few features dominate.
    HashedGaussian,
    /// Features hashed into `buckets` signed buckets, then structured random rotations
    /// ([`FwhtSigner`]): cost `nnz + f·log d` per vector, for wide signatures.
    Fwht {
        /// Buckets `d`, a power of two.
        buckets: usize,
    },
}

/// What is signed, as far as the default signer goes ([`SignerKind::default_for`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputKind {
    /// Dense vectors.
    Dense,
    /// Sparse vectors (feature ids and weights).
    Sparse,
    /// Documents (hashed token features).
    Text,
}

impl FromStr for InputKind {
    type Err = Error;

    /// `dense`, `sparse` or `text`.
    ///
    /// ```
    /// use simlsh::signers::InputKind;
    ///
    /// assert_eq!("sparse".parse::<InputKind>()?, InputKind::Sparse);
    /// assert!("images".parse::<InputKind>().is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "dense" => Ok(InputKind::Dense),
            "sparse" => Ok(InputKind::Sparse),
            "text" => Ok(InputKind::Text),
            other => Err(Error::param(
                "input",
                format!("unknown input `{other}` (dense, sparse, text)"),
            )),
        }
    }
}

/// The narrowest signature that the default signer of text signs by structured rotations
/// ([`SignerKind::default_for`]).
pub const FWHT_TEXT_BITS: usize = 1024;

impl SignerKind {
    /// The signer used when none is chosen for `bits`-bit signatures, by the command line,
    /// Python and Spark alike: the hashed Gaussian signer, except for text at
    /// [`FWHT_TEXT_BITS`] bits or more, where the structured-rotation signer ([`FwhtSigner`],
    /// 1,024 buckets) costs less.
    ///
    /// On sparse rows and text the hashed Gaussian signer keeps the `1 − θ/π` law when a few
    /// features dominate a row (the `±1` columns of the hashing trick do not), at about 1.4×
    /// its cost per nonzero; dense embeddings have heavy coordinates too (on GloVe 10,000 × 50
    /// at 256 bits, four seeds: recall@10 0.575–0.586 against 0.546–0.568 for the hashing
    /// trick, mean cosine error 0.072–0.075 against 0.075–0.077). Its cost grows with
    /// `f × nnz`; the rotations' with `nnz + f·log d`. At the widths the join planner picks for
    /// large corpora (1,024 bits and up) the rotations sign text several times faster, and
    /// keep the law within binomial bounds on the dominance set and real TF-IDF rows
    /// (`tests/collision_law.rs`). Dense and sparse vectors keep the hashed Gaussian signer:
    /// hashing their coordinates into buckets would add an error that they do not need.
    pub fn default_for(input: InputKind, bits: usize) -> SignerKind {
        match input {
            InputKind::Text if bits >= FWHT_TEXT_BITS => SignerKind::Fwht {
                buckets: DEFAULT_BUCKETS,
            },
            InputKind::Dense | InputKind::Sparse | InputKind::Text => SignerKind::HashedGaussian,
        }
    }
}

const KINDS: &[KindInfo] = &[
    KindInfo {
        name: "gaussian",
        summary: "explicit Gaussian D × f matrix (Charikar 2002): the exact 1 − θ/π collision law",
        params: &[],
    },
    KindInfo {
        name: "super-bit",
        summary: "Gaussian hyperplanes orthonormalised in batches (Ji et al. 2012): lowest error on dense vectors",
        params: &[ParamInfo {
            name: "depth",
            default: "min(D, f)",
            summary: "hyperplanes orthonormalised together, 1 ≤ depth ≤ min(D, f)",
        }],
    },
    KindInfo {
        name: "rademacher",
        summary: "explicit ±1 D × f matrix stored as bits (Achlioptas 2003)",
        params: &[],
    },
    KindInfo {
        name: "very-sparse",
        summary: "explicit sparse ±1 matrix (Li, Hastie & Church 2006): for dense inputs",
        params: &[
            ParamInfo {
                name: "density",
                default: "1/√D",
                summary: "fraction of nonzero matrix entries, in (0, 1]",
            },
            ParamInfo {
                name: "nnz",
                default: "none",
                summary: "expected nonzeros per input row: the density becomes max(1/√D, ln 100 / nnz), so that under 1% of a row's projections are 0",
            },
        ],
    },
    KindInfo {
        name: "hashing-trick",
        summary: "±1 columns hashed from each feature (Manku et al. 2007): no matrix, any dimension, tokens; fastest",
        params: &[],
    },
    KindInfo {
        name: "pooled",
        summary: "hashed picks from a pool of Gaussians (Van Durme & Lall 2010): any dimension, tokens",
        params: &[ParamInfo {
            name: "pool",
            default: "10000",
            summary: "pool size m, 1 ≤ m ≤ 2^32",
        }],
    },
    KindInfo {
        name: "hashed-gaussian",
        summary: "quantised Gaussian columns hashed from each feature: no matrix, any dimension, tokens; unbiased when a few features dominate",
        params: &[],
    },
    KindInfo {
        name: "fwht",
        summary: "features hashed into d signed buckets, then fast Walsh–Hadamard rotations (FJLT, FALCONN): cost nnz + f·log d, for wide signatures",
        params: &[ParamInfo {
            name: "buckets",
            default: "1024",
            summary: "buckets d, a power of two from 64 to 2^20",
        }],
    },
];

/// Every signer kind with a one-line description and its parameters, in the order of
/// [`SignerKind`].
pub fn kinds() -> &'static [KindInfo] {
    KINDS
}

impl SignerKind {
    /// The kind's name (`gaussian`, `hashing-trick`, …), as in [`SignerInfo::kind`].
    pub fn name(&self) -> &'static str {
        match self {
            SignerKind::Gaussian => "gaussian",
            SignerKind::SuperBit { .. } => "super-bit",
            SignerKind::Rademacher => "rademacher",
            SignerKind::VerySparse { .. } => "very-sparse",
            SignerKind::HashingTrick => "hashing-trick",
            SignerKind::Pooled { .. } => "pooled",
            SignerKind::HashedGaussian => "hashed-gaussian",
            SignerKind::Fwht { .. } => "fwht",
        }
    }

    /// Whether the kind holds an explicit `D × f` matrix and so needs the input dimension
    /// (the hashed kinds take any dimension).
    pub fn needs_dim(&self) -> bool {
        match self {
            SignerKind::Gaussian
            | SignerKind::SuperBit { .. }
            | SignerKind::Rademacher
            | SignerKind::VerySparse { .. } => true,
            SignerKind::HashingTrick
            | SignerKind::Pooled { .. }
            | SignerKind::HashedGaussian
            | SignerKind::Fwht { .. } => false,
        }
    }

    /// The description of the kind in [`kinds`].
    pub fn info(&self) -> &'static KindInfo {
        grammar::info_of(KINDS, self.name())
    }

    /// The hash a hashed kind records in files (`signer.hash`).
    fn hash(&self) -> Option<&'static str> {
        match self {
            SignerKind::HashingTrick => Some(HASH_DESCRIPTION),
            SignerKind::HashedGaussian => Some(GAUSSIAN_HASH),
            SignerKind::Fwht { .. } => Some(FWHT_HASH),
            _ => None,
        }
    }

    /// The parameters that are set, as `(key, value)` pairs in the order of the string form.
    fn set_params(&self) -> Vec<(&'static str, String)> {
        match self {
            SignerKind::SuperBit { depth: Some(d) } => vec![("depth", d.to_string())],
            SignerKind::VerySparse { density, nnz } => density
                .map(|p| ("density", p.to_string()))
                .into_iter()
                .chain(nnz.map(|k| ("nnz", k.to_string())))
                .collect(),
            SignerKind::Pooled { pool } if *pool != DEFAULT_POOL => {
                vec![("pool", pool.to_string())]
            }
            SignerKind::Fwht { buckets } if *buckets != DEFAULT_BUCKETS => {
                vec![("buckets", buckets.to_string())]
            }
            _ => Vec::new(),
        }
    }
}

impl fmt::Display for SignerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        grammar::write(f, self.name(), &self.set_params())
    }
}

/// The kind of a parsed text form (or of a file's `signer.*` pairs), its parameters checked
/// against the kind's.
fn kind_from(t: &SpecText<'_>) -> Result<SignerKind> {
    let info = t.kind_in("signer", KINDS)?;
    Ok(match info.name {
        "gaussian" => SignerKind::Gaussian,
        "super-bit" => SignerKind::SuperBit {
            depth: t.get("depth", "a whole number")?,
        },
        "rademacher" => SignerKind::Rademacher,
        "very-sparse" => {
            let density: Option<f64> = t.get("density", "a number")?;
            if let Some(d) = density.filter(|d| !(*d > 0.0 && *d <= 1.0)) {
                return Err(t.bad(format!("`density={d}` is not in (0, 1]")));
            }
            SignerKind::VerySparse {
                density,
                nnz: t.get("nnz", "a whole number")?,
            }
        }
        "hashing-trick" => SignerKind::HashingTrick,
        "pooled" => SignerKind::Pooled {
            pool: t.get("pool", "a whole number")?.unwrap_or(DEFAULT_POOL),
        },
        "hashed-gaussian" => SignerKind::HashedGaussian,
        "fwht" => SignerKind::Fwht {
            buckets: t
                .get("buckets", "a whole number")?
                .unwrap_or(DEFAULT_BUCKETS),
        },
        _ => unreachable!("every listed kind is parsed"),
    })
}

impl FromStr for SignerKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        kind_from(&SpecText::parse(WHAT, s)?)
    }
}

impl SignerKind {
    /// The kind of the text form `spec` with parameters given apart from it (`(key, value)`
    /// pairs, a front end's keyword arguments), and the keys given in either, in the order of
    /// the kind's [`KindInfo::params`]. A key may be given in both only with the same value.
    ///
    /// ```
    /// use simlsh::signers::SignerKind;
    ///
    /// let (kind, given) = SignerKind::parse_with("very-sparse:nnz=40", &[("density", "0.5")])?;
    /// let expected = SignerKind::VerySparse { density: Some(0.5), nnz: Some(40) };
    /// assert_eq!((kind, given), (expected, vec!["density", "nnz"]));
    /// // The default pool is not given.
    /// assert_eq!(SignerKind::parse_with("pooled", &[])?.1, Vec::<&str>::new());
    /// assert!(SignerKind::parse_with("pooled:pool=100", &[("pool", "100")]).is_ok());
    /// let e = SignerKind::parse_with("pooled:pool=100", &[("pool", "200")]).unwrap_err();
    /// assert!(e.to_string().contains("parameter `pool` given twice: 100 in `pooled:pool=100` and 200"));
    /// // Two keywords for one parameter: neither is the text's.
    /// let e = SignerKind::parse_with("pooled", &[("pool", "10"), ("pool", "100")]).unwrap_err();
    /// assert!(e.to_string().ends_with("parameter `pool` given twice: 10 and 100"), "{e}");
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`FromStr`], for the text and the pairs; [`Error::InvalidParameter`] for a key given
    /// twice with different values.
    pub fn parse_with<'a>(
        spec: &'a str,
        params: &[(&'a str, &'a str)],
    ) -> Result<(SignerKind, Vec<&'static str>)> {
        let t = SpecText::parse(WHAT, spec)?;
        // The text alone first, so that its own errors are named before the pairs'.
        kind_from(&t)?;
        let t = t.with(params, kind_from)?;
        let kind = kind_from(&t)?;
        let given = kind.info().params.iter().map(|p| p.name);
        Ok((kind, given.filter(|k| t.raw(k).is_some()).collect()))
    }
}

/// What the errors of the text form name.
const WHAT: &str = "signer spec";

/// A signer, fully described: its kind and parameters, width, seed and (for the explicit
/// matrices, when known) input dimension. [`build`](Self::build) makes the signer;
/// [`to_params`](Self::to_params) and [`from_params`](Self::from_params) are the `signer.*`
/// parameters of signature and index files.
///
/// The string form ([`FromStr`], [`Display`](fmt::Display)) is that of the [`SignerKind`]:
/// width, seed and dimension are fields, set by the chained setters.
#[derive(Clone, Debug, PartialEq)]
pub struct SignerSpec {
    /// The kind and its parameters.
    pub kind: SignerKind,
    /// Signature width `f` (default 64).
    pub bits: usize,
    /// Seed of the matrix, pool or feature hash (default 0).
    pub seed: u64,
    /// Input dimension `D` of an explicit matrix, if fixed by the spec (a file records it);
    /// `None` to take it from [`build`](Self::build).
    pub dim: Option<u64>,
}

impl Default for SignerSpec {
    fn default() -> Self {
        SignerSpec {
            kind: SignerKind::default(),
            bits: 64,
            seed: 0,
            dim: None,
        }
    }
}

impl From<SignerKind> for SignerSpec {
    fn from(kind: SignerKind) -> Self {
        SignerSpec {
            kind,
            ..SignerSpec::default()
        }
    }
}

impl From<Distribution> for SignerKind {
    /// The kind of an explicit matrix drawn from `d`: `SignerKind::from(Distribution::default())`
    /// names the distribution a [`HyperplaneSigner`] takes when none is chosen (`gaussian`).
    fn from(d: Distribution) -> Self {
        match d {
            Distribution::Gaussian => SignerKind::Gaussian,
            Distribution::Rademacher => SignerKind::Rademacher,
            Distribution::VerySparse { density } => SignerKind::VerySparse { density, nnz: None },
            Distribution::SuperBit { depth } => SignerKind::SuperBit { depth },
        }
    }
}

impl FromStr for SignerSpec {
    type Err = Error;

    /// Parses the kind and its parameters; width, seed and dimension take their defaults.
    fn from_str(s: &str) -> Result<Self> {
        Ok(s.parse::<SignerKind>()?.into())
    }
}

impl fmt::Display for SignerSpec {
    /// The kind and its parameters (width, seed and dimension are not part of the string).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

fn get<'a>(params: &'a BTreeMap<String, String>, key: &'static str) -> Result<&'a str> {
    params
        .get(key)
        .map(String::as_str)
        .ok_or_else(|| Error::param(key, "missing from the signer parameters"))
}

fn parse<T: FromStr>(params: &BTreeMap<String, String>, key: &'static str) -> Result<T> {
    let v = get(params, key)?;
    v.parse()
        .map_err(|_| Error::param(key, format!("`{v}` is not valid")))
}

impl SignerSpec {
    /// A spec of `kind` with the default width (64), seed (0) and no dimension.
    pub fn new(kind: SignerKind) -> Self {
        kind.into()
    }

    /// Signature width `f`.
    pub fn bits(mut self, f: usize) -> Self {
        self.bits = f;
        self
    }

    /// Seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Input dimension of an explicit matrix.
    pub fn dim(mut self, d: u64) -> Self {
        self.dim = Some(d);
        self
    }

    /// Builds the signer. `dim` is the input dimension, needed by the explicit matrices
    /// ([`SignerKind::needs_dim`]) unless the spec has one; hashed signers take any dimension
    /// and ignore it. A spec whose dimension differs from `dim` is an error (a matrix drawn for
    /// one dimension does not sign vectors of another).
    pub fn build(&self, dim: Option<u64>) -> Result<AnySigner> {
        self.build_within(dim, u64::MAX)
    }

    /// [`build`](Self::build), with an explicit matrix limited to `max_bytes` (see
    /// [`HyperplaneBuilder::max_bytes`](super::HyperplaneBuilder::max_bytes)): a command line
    /// passes the memory available, so that a dimension read from a file is a clear error.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn build_within(&self, dim: Option<u64>, max_bytes: u64) -> Result<AnySigner> {
        let dim = match (self.dim, dim) {
            (Some(a), Some(b)) if self.kind.needs_dim() && a != b => {
                return Err(Error::DimensionMismatch {
                    expected: a,
                    got: b,
                });
            }
            (a, b) => a.or(b),
        };
        let matrix = |d: Distribution, nnz: Option<u64>| -> Result<AnySigner> {
            let dim = dim.ok_or_else(|| {
                Error::param(
                    "dim",
                    format!(
                        "the {} signer holds a D × f matrix and needs the input dimension D \
                         (hashed signers such as hashing-trick or pooled take any dimension)",
                        self.kind.name()
                    ),
                )
            })?;
            let b = HyperplaneSigner::builder()
                .dim(dim)
                .bits(self.bits)
                .seed(self.seed)
                .distribution(d)
                .max_bytes(max_bytes);
            Ok(match nnz {
                Some(k) => b.expected_nnz(k),
                None => b,
            }
            .build()?
            .into())
        };
        match self.kind {
            SignerKind::Gaussian => matrix(Distribution::Gaussian, None),
            SignerKind::SuperBit { depth } => matrix(Distribution::SuperBit { depth }, None),
            SignerKind::Rademacher => matrix(Distribution::Rademacher, None),
            SignerKind::VerySparse { density, nnz } => {
                matrix(Distribution::VerySparse { density }, nnz)
            }
            SignerKind::HashingTrick => Ok(HashingTrick::builder()
                .bits(self.bits)
                .seed(self.seed)
                .build()?
                .into()),
            SignerKind::Pooled { pool } => Ok(PooledSigner::builder()
                .bits(self.bits)
                .seed(self.seed)
                .pool_size(pool)
                .build()?
                .into()),
            SignerKind::HashedGaussian => Ok(HashedGaussian::builder()
                .bits(self.bits)
                .seed(self.seed)
                .build()?
                .into()),
            SignerKind::Fwht { buckets } => Ok(FwhtSigner::builder()
                .bits(self.bits)
                .seed(self.seed)
                .buckets(buckets)
                .build()?
                .into()),
        }
    }

    /// The spec with the defaults that depend on the dimension written out as a build
    /// resolves them: a super-bit depth `min(D, f)`, a very sparse density `1/√D` or the one
    /// `nnz` asks for (then `nnz` is dropped: the density alone draws the matrix). Without a
    /// dimension, the spec as it is.
    pub fn resolved(&self) -> SignerSpec {
        let mut s = self.clone();
        let Some(dim) = self.dim else { return s };
        match &mut s.kind {
            SignerKind::SuperBit { depth } if depth.is_none() => {
                *depth = Some(usize::try_from(dim).unwrap_or(usize::MAX).min(self.bits));
            }
            SignerKind::VerySparse { density, nnz } if density.is_none() => {
                let default = 1.0 / (dim as f64).sqrt();
                *density = Some(match *nnz {
                    Some(k) if k > 0 => default.max((super::ZERO_TARGET / k as f64).min(1.0)),
                    _ => default,
                });
                *nnz = None;
            }
            _ => {}
        }
        s
    }

    /// Whether the two specs build the same signer: same kind, width and seed, and for the
    /// explicit matrices the same dimension and [`resolved`](Self::resolved) parameters
    /// (hashed signers take any dimension). Compared by parameters: nothing is built, so
    /// comparing a record naming a huge matrix or pool costs nothing.
    ///
    /// ```
    /// use simlsh::signers::SignerSpec;
    /// let given: SignerSpec = "super-bit".parse()?;
    /// let recorded: SignerSpec = "super-bit:depth=64".parse()?;
    /// assert!(given.bits(64).dim(300).same_signer(&recorded.bits(64).dim(300)));
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    pub fn same_signer(&self, other: &SignerSpec) -> bool {
        let (a, b) = (self.resolved(), other.resolved());
        a.kind == b.kind
            && a.bits == b.bits
            && a.seed == b.seed
            && (!a.kind.needs_dim() || a.dim == b.dim)
    }

    /// The spec as `signer.*` parameters, the keys [`persist::save_signatures`](crate::persist::save_signatures)
    /// records from a signer's [`SignerInfo::to_params`]: `signer.kind`, `signer.bits`,
    /// `signer.seed`, `signer.dim` when set, and the kind's parameters when set.
    pub fn to_params(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        m.insert("signer.kind".into(), self.kind.name().into());
        m.insert("signer.bits".into(), self.bits.to_string());
        m.insert("signer.seed".into(), self.seed.to_string());
        if let Some(d) = self.dim {
            m.insert("signer.dim".into(), d.to_string());
        }
        for (k, v) in self.kind.set_params() {
            // In files, `density` is the measured density of the matrix.
            let k = if k == "density" { "density_param" } else { k };
            m.insert(format!("signer.{k}"), v);
        }
        if let Some(hash) = self.kind.hash() {
            m.insert("signer.hash".into(), hash.into());
        }
        m
    }

    /// The spec recorded in a file's parameters (`signer.*` keys, as written by
    /// [`persist::save_signatures`](crate::persist::save_signatures) or [`to_params`](Self::to_params);
    /// other keys are ignored): building it gives the signer that made the file.
    ///
    /// Errors name the offending key: a missing or malformed value, an unknown kind or
    /// parameter, a `custom` matrix (not drawn from a seed), or a hash other than this
    /// release's. Files written before the very sparse signer recorded its density exactly
    /// hold only the measured density: those of the default density `1/√D` are recognised
    /// (by rebuilding the matrix and comparing), others are an error.
    pub fn from_params(params: &BTreeMap<String, String>) -> Result<Self> {
        let kind = get(params, "signer.kind")?;
        let bits: usize = parse(params, "signer.bits")?;
        let seed: u64 = parse(params, "signer.seed")?;
        let dim: Option<u64> = match params.get("signer.dim") {
            Some(_) => Some(parse(params, "signer.dim")?),
            None => None,
        };
        if kind == "custom" {
            return Err(Error::param(
                "signer.kind",
                "a custom matrix (from_matrix, from_sign_words) is the caller's, not drawn \
                 from a seed: it cannot be rebuilt from parameters",
            ));
        }
        let mut pairs: Vec<(&str, &str)> = params
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("signer.")?, v.as_str())))
            .filter(|(k, _)| !matches!(*k, "kind" | "bits" | "seed" | "dim"))
            .collect();
        // Keys that describe rather than parametrise the signer.
        let mut legacy_density = None;
        match kind {
            "hashing-trick" | "hashed-gaussian" | "fwht" => {
                let hash = get(params, "signer.hash")?;
                let ours = kind_from(&SpecText::from_pairs(WHAT, kind, Vec::new())?)?
                    .hash()
                    .expect("a hashed kind");
                if hash != ours {
                    return Err(Error::param(
                        "signer.hash",
                        format!(
                            "the signatures were made with the hash `{hash}`, this release \
                             hashes with `{ours}`"
                        ),
                    ));
                }
                pairs.retain(|p| p.0 != "hash");
            }
            "very-sparse" => {
                // `density` is the measured density (six decimals), `density_param` the one
                // the matrix was drawn with; files older than `density_param` have only the
                // first.
                let measured = pairs.iter().position(|p| p.0 == "density");
                let measured = measured.map(|k| pairs.remove(k).1);
                match pairs.iter_mut().find(|p| p.0 == "density_param") {
                    Some(p) => p.0 = "density",
                    None => legacy_density = measured,
                }
            }
            _ => {}
        }
        let spec = SignerSpec {
            kind: kind_from(&SpecText::from_pairs(WHAT, kind, pairs)?)?,
            bits,
            seed,
            dim,
        };
        match legacy_density {
            None => Ok(spec),
            Some(measured) => recognise_default_density(spec, measured),
        }
    }
}

/// The largest dimension of an old very sparse record [`recognise_default_density`] counts
/// the draws of (about a second of CPU).
const MAX_LEGACY_DIM: u64 = 1 << 26;

/// A file written before the very sparse signer recorded its density holds the measured
/// density (`nonzeros / (D·f)`, six decimals): it is the default-density matrix if drawing
/// that gives the same figure. The draws are counted, not stored, and only for a matrix the
/// process could hold (a record naming a larger one could not sign queries anyway).
fn recognise_default_density(spec: SignerSpec, measured: &str) -> Result<SignerSpec> {
    let dim = spec
        .dim
        .ok_or_else(|| Error::param("signer.dim", "missing from a very sparse signer's record"))?;
    let d = usize::try_from(dim)
        .ok()
        .filter(|&d| d > 0)
        .ok_or_else(|| Error::param("signer.dim", format!("{dim} is not a dimension")))?;
    super::required_bits(Some(spec.bits))?;
    let builder = HyperplaneSigner::builder()
        .dim(dim)
        .bits(spec.bits)
        .distribution(Distribution::VerySparse { density: None });
    let what = format!("a very sparse matrix of D = {dim} × f = {}", spec.bits);
    crate::memory::check(&what, builder.matrix_bytes().unwrap_or(u64::MAX))?;
    // Counting takes a draw per row: bounded, so that comparing a record stays cheap.
    if dim > MAX_LEGACY_DIM {
        return Err(Error::param(
            "signer.dim",
            format!(
                "an old very sparse record (measured density only) of D = {dim} > 2^26 is not \
                 recognised: rebuild the file with this release, which records the density"
            ),
        ));
    }
    let p = 1.0 / (dim as f64).sqrt();
    let nonzeros = super::hyperplane::very_sparse_nonzeros(d, spec.bits, p, spec.seed);
    let rebuilt = format!("{:.6}", nonzeros as f64 / (dim as f64 * spec.bits as f64));
    if rebuilt == measured {
        Ok(spec)
    } else {
        Err(Error::param(
            "signer.density",
            format!(
                "the file records the measured density {measured} of a very sparse matrix, \
                 not the density it was drawn with; only the default density 1/√D is \
                 recognised"
            ),
        ))
    }
}

impl SignerInfo {
    /// The `signer.*` parameters recorded in signature and index files: `signer.kind`,
    /// `signer.seed`, `signer.bits`, `signer.dim` when bounded, and every entry of
    /// [`params`](Self::params). [`SignerSpec::from_params`] reads them back.
    pub fn to_params(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        m.insert("signer.kind".into(), self.kind.to_string());
        m.insert("signer.seed".into(), self.seed.to_string());
        m.insert("signer.bits".into(), self.bits.to_string());
        if let Some(d) = self.dim {
            m.insert("signer.dim".into(), d.to_string());
        }
        for (k, v) in &self.params {
            m.insert(format!("signer.{k}"), v.clone());
        }
        m
    }
}

impl AnySigner {
    /// The spec that rebuilds this signer (from its [`info`](Signer::info)); an error for a
    /// `custom` matrix.
    pub fn spec(&self) -> Result<SignerSpec> {
        SignerSpec::from_params(&self.info().to_params())
    }
}
