//! [`IndexSpec`]: every index kind and its parameters as one value, with a compact text form
//! (`manku:k=3`, `mih:m=4`, `permutation:q=64,beam=128`) shared by the command line, the
//! Python package and Spark.
//!
//! # The text form
//!
//! `KIND[:KEY=VALUE[,KEY=VALUE]...]`, the kinds and keys of [`kinds()`]:
//!
//! | kind | keys (default) |
//! |---|---|
//! | `linear` | none |
//! | `manku` | `k` radius (3); one of `levels` blocks per level, `+`-separated (`4`, `4+4`), `blocks` (one level), `tables` most tables, `budget` bytes (default: the planned design) |
//! | `mih` | `m` substrings (automatic), `delta` delta limit (automatic), `fallback` scan fallback (`true`) |
//! | `permutation` | `q` permutations (16), `beam` (32), `seed` (0) |
//! | `graph` | `m` out-degree (32), `ef` search beam (64), `efc` insertion beam (64), `seed` (0), `fallback` scan fallback (`true`) |
//!
//! [`Display`](std::fmt::Display) writes the kind and the parameters that differ from their
//! defaults, so `parse(spec.to_string()) == spec`. The spec of a built index
//! ([`HammingIndex::spec`]) is fully determined: a planned Manku design is written with its
//! levels, so that the same spec rebuilds the same tables.
//!
//! ```
//! use simlsh::index::IndexSpec;
//! use simlsh::SignatureMatrix;
//!
//! let spec: IndexSpec = "manku:k=2,levels=4".parse()?;
//! assert_eq!(spec.to_string(), "manku:k=2,levels=4");
//! let codes = SignatureMatrix::from_parts(64, vec![0b1011u64, 0b1000, u64::MAX])?;
//! let idx = spec.build(&codes)?;
//! assert_eq!(idx.kind(), "manku");
//! assert_eq!(idx.radius(&[0b1001], 1)?.len(), 2);
//! assert_eq!(idx.spec(), spec);
//! # Ok::<(), simlsh::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use super::graph::{
    DEFAULT_EF, DEFAULT_EF_CONSTRUCTION, DEFAULT_GRAPH_SEED, DEFAULT_M, GraphBuilder, GraphIndex,
};
use super::{
    DEFAULT_BEAM, DEFAULT_PERMUTATIONS, DEFAULT_SEED, HammingIndex, LinearScan, MultiIndex,
    PermutationIndex, PermutedTables,
};
use crate::error::{Error, Result};
use crate::signature::SignatureMatrix;
use crate::util::spec::{self as grammar, KindInfo, ParamInfo, SpecText};

pub use super::permuted_tables::DEFAULT_RADIUS;

/// Which index to build, with its parameters. See the [module documentation](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexSpec {
    /// [`LinearScan`]: exact, no parameters.
    Linear,
    /// [`PermutedTables`] (Manku et al. 2007).
    Manku(MankuSpec),
    /// [`MultiIndex`] (multi-index hashing).
    Mih(MihSpec),
    /// [`PermutationIndex`] (approximate k-NN).
    Permutation(PermutationSpec),
    /// [`GraphIndex`] (approximate k-NN).
    Graph(GraphSpec),
}

/// How a Manku index picks its design (see [`crate::index::permuted_tables::design`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum MankuDesign {
    /// The planner's design of least query cost for the data size.
    #[default]
    Planned,
    /// Explicit blocks per level (`levels=4`, `levels=4+4`).
    Levels(Vec<usize>),
    /// The planner's best design with at most this many tables (`tables=10`).
    MaxTables(usize),
    /// The planner's best design within this many bytes (`budget=1000000`).
    Budget(u64),
}

/// Parameters of [`PermutedTables`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MankuSpec {
    /// Radius `k` the tables answer exactly (`k`, default 3).
    pub radius: u32,
    /// The design.
    pub design: MankuDesign,
}

impl Default for MankuSpec {
    fn default() -> Self {
        MankuSpec {
            radius: DEFAULT_RADIUS,
            design: MankuDesign::Planned,
        }
    }
}

/// Parameters of [`MultiIndex`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MihSpec {
    /// Number of substrings `m` (`m`; `None`: automatic, recomputed at every rebuild).
    pub substrings: Option<usize>,
    /// Delta limit (`delta`; `None`: automatic, `max(256, 8·√N)`).
    pub delta_limit: Option<usize>,
    /// Whether searches may fall back to a scan (`fallback`, default `true`).
    pub fallback: bool,
}

impl Default for MihSpec {
    fn default() -> Self {
        MihSpec {
            substrings: None,
            delta_limit: None,
            fallback: true,
        }
    }
}

/// Parameters of [`PermutationIndex`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PermutationSpec {
    /// Number of permutations `q` (`q`, default 16).
    pub permutations: usize,
    /// Beam `B` (`beam`, default 32).
    pub beam: usize,
    /// Seed of the permutations (`seed`, default 0).
    pub seed: u64,
}

impl Default for PermutationSpec {
    fn default() -> Self {
        PermutationSpec {
            permutations: DEFAULT_PERMUTATIONS,
            beam: DEFAULT_BEAM,
            seed: DEFAULT_SEED,
        }
    }
}

/// Parameters of [`GraphIndex`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphSpec {
    /// Out-degree `m` (`m`, default 32).
    pub m: usize,
    /// Search beam (`ef`, default 64).
    pub ef: usize,
    /// Insertion beam (`efc`, default 64).
    pub ef_construction: usize,
    /// Seed of the insertion order and entry points (`seed`, default 0).
    pub seed: u64,
    /// Whether k-NN may fall back to the scan (`fallback`, default `true`).
    pub fallback: bool,
}

impl Default for GraphSpec {
    fn default() -> Self {
        GraphSpec {
            m: DEFAULT_M,
            ef: DEFAULT_EF,
            ef_construction: DEFAULT_EF_CONSTRUCTION,
            seed: DEFAULT_GRAPH_SEED,
            fallback: true,
        }
    }
}

impl Default for IndexSpec {
    /// Manku's permuted tables at radius 3 with the planned design.
    fn default() -> Self {
        IndexSpec::Manku(MankuSpec::default())
    }
}

const KINDS: &[KindInfo] = &[
    KindInfo {
        name: "linear",
        summary: "brute force by hardware popcount: exact, no build, no extra memory",
        params: &[],
    },
    KindInfo {
        name: "manku",
        summary: "Manku's permuted tables (2007): exact, fastest for radii up to k on codes of 64 bits",
        params: &[
            ParamInfo {
                name: "k",
                default: "3",
                summary: "radius the tables answer by probing (larger radii scan)",
            },
            ParamInfo {
                name: "levels",
                default: "planned",
                summary: "blocks per level, `+`-separated (4: 4 tables for k = 3; 4+4: 16)",
            },
            ParamInfo {
                name: "blocks",
                default: "planned",
                summary: "one level of this many blocks (same as levels=N)",
            },
            ParamInfo {
                name: "tables",
                default: "none",
                summary: "the planned design with at most this many tables",
            },
            ParamInfo {
                name: "budget",
                default: "none",
                summary: "the planned design within this many bytes",
            },
        ],
    },
    KindInfo {
        name: "mih",
        summary: "multi-index hashing (Norouzi et al. 2012): exact at any radius and for k-NN",
        params: &[
            ParamInfo {
                name: "m",
                default: "auto",
                summary: "substrings, between ceil(f/64) and f (auto: round(f / log2 N))",
            },
            ParamInfo {
                name: "delta",
                default: "auto",
                summary: "inserted codes kept unindexed before a merge (auto: max(256, 8 sqrt N))",
            },
            ParamInfo {
                name: "fallback",
                default: "true",
                summary: "whether a search may scan when the cost model says it is cheaper",
            },
        ],
    },
    KindInfo {
        name: "permutation",
        summary: "sorted random bit permutations (Charikar 2002): approximate k-NN for wide codes, exact radius",
        params: &[
            ParamInfo {
                name: "q",
                default: "16",
                summary: "number of permutations (memory and time grow with it)",
            },
            ParamInfo {
                name: "beam",
                default: "32",
                summary: "codes compared on each side of the query in each sorted list",
            },
            ParamInfo {
                name: "seed",
                default: "0",
                summary: "seed of the permutations",
            },
        ],
    },
    KindInfo {
        name: "graph",
        summary: "a navigable graph (pruned NN-Descent k-NN graph) searched by beam: approximate k-NN, sublinear on codes with close neighbours; exact radius",
        params: &[
            ParamInfo {
                name: "m",
                default: "32",
                summary: "out-degree: neighbours kept per code (memory 4 m bytes a code)",
            },
            ParamInfo {
                name: "ef",
                default: "88",
                summary: "search beam: nodes a k-NN search keeps (recall and time grow with it)",
            },
            ParamInfo {
                name: "efc",
                default: "64",
                summary: "beam of inserts after the build: a larger one inserts slower and links better",
            },
            ParamInfo {
                name: "seed",
                default: "0",
                summary: "seed of the insertion order and the entry points",
            },
            ParamInfo {
                name: "fallback",
                default: "true",
                summary: "whether k-NN scans when the build's check finds the graph no better",
            },
        ],
    },
];

/// Every index kind with a one-line description and its parameters.
///
/// ```
/// let names: Vec<&str> = simlsh::index::kinds().iter().map(|k| k.name).collect();
/// assert_eq!(names, ["linear", "manku", "mih", "permutation", "graph"]);
/// ```
pub fn kinds() -> &'static [KindInfo] {
    KINDS
}

/// What the errors of the text form name.
const WHAT: &str = "index spec";

fn bad(reason: impl Into<String>) -> Error {
    Error::param(WHAT, reason)
}

fn number<T: FromStr>(key: &str, value: &str) -> Result<T> {
    value
        .parse()
        .map_err(|_| bad(format!("`{key}={value}`: expected a whole number")))
}

fn positive(key: &str, value: &str) -> Result<usize> {
    match number::<usize>(key, value)? {
        0 => Err(bad(format!("`{key}={value}`: must be at least 1"))),
        v => Ok(v),
    }
}

fn levels(key: &str, value: &str) -> Result<Vec<usize>> {
    if value.is_empty() || value == "scan" {
        return Ok(Vec::new());
    }
    value.split('+').map(|v| positive(key, v)).collect()
}

impl IndexSpec {
    /// The kind's name: `linear`, `manku`, `mih` or `permutation`.
    pub fn kind(&self) -> &'static str {
        match self {
            IndexSpec::Linear => "linear",
            IndexSpec::Manku(_) => "manku",
            IndexSpec::Mih(_) => "mih",
            IndexSpec::Permutation(_) => "permutation",
            IndexSpec::Graph(_) => "graph",
        }
    }

    /// The description of the kind in [`kinds()`].
    pub fn info(&self) -> &'static KindInfo {
        grammar::info_of(KINDS, self.kind())
    }

    /// Whether k-NN answers of the kind are exact ([`HammingIndex::exact_knn`]).
    pub fn exact_knn(&self) -> bool {
        match self {
            IndexSpec::Linear | IndexSpec::Manku(_) | IndexSpec::Mih(_) => true,
            IndexSpec::Permutation(_) | IndexSpec::Graph(_) => false,
        }
    }

    /// The spec with its seed replaced by `seed`, for kinds that draw random numbers
    /// (`permutation`, `graph`); other kinds are unchanged.
    pub fn with_seed(mut self, seed: u64) -> Self {
        match &mut self {
            IndexSpec::Permutation(p) => p.seed = seed,
            IndexSpec::Graph(g) => g.seed = seed,
            _ => {}
        }
        self
    }

    /// The seed of kinds that draw random numbers.
    pub fn seed(&self) -> Option<u64> {
        match self {
            IndexSpec::Permutation(p) => Some(p.seed),
            IndexSpec::Graph(g) => Some(g.seed),
            _ => None,
        }
    }

    /// An index of the rows of `sigs`, with ids `0..N`.
    ///
    /// # Errors
    /// The builder's errors: [`Error::InvalidParameter`] for parameters out of range for
    /// this width or data size (a Manku design that does not hold the radius, a substring
    /// count outside `[⌈f/64⌉, f]`, ...).
    pub fn build<S: AsRef<[u64]>>(
        &self,
        sigs: &SignatureMatrix<S>,
    ) -> Result<Box<dyn HammingIndex>> {
        Ok(match self {
            IndexSpec::Linear => Box::new(LinearScan::build(sigs)?),
            IndexSpec::Manku(m) => Box::new(m.builder().build(sigs)?),
            IndexSpec::Mih(m) => Box::new(m.builder().build(sigs)?),
            IndexSpec::Permutation(p) => Box::new(p.builder().build(sigs)?),
            IndexSpec::Graph(g) => Box::new(g.builder().build(sigs)?),
        })
    }

    /// An empty index of `bits`-bit codes, to insert into.
    ///
    /// # Errors
    /// As [`build`](Self::build), and [`Error::InvalidParameter`] if `bits` is 0.
    pub fn empty(&self, bits: usize) -> Result<Box<dyn HammingIndex>> {
        Ok(match self {
            IndexSpec::Linear => Box::new(LinearScan::new(bits)?),
            IndexSpec::Manku(m) => Box::new(m.builder().bits(bits).empty()?),
            IndexSpec::Mih(m) => Box::new(m.builder().empty(bits)?),
            IndexSpec::Permutation(p) => Box::new(p.builder().empty(bits)?),
            IndexSpec::Graph(g) => Box::new(g.builder().empty(bits)?),
        })
    }
}

impl MankuSpec {
    /// The builder of these parameters.
    pub fn builder(&self) -> crate::index::PermutedTablesBuilder {
        let b = PermutedTables::builder().radius(self.radius);
        match &self.design {
            MankuDesign::Planned => b,
            MankuDesign::Levels(l) => b.levels(l),
            MankuDesign::MaxTables(t) => b.tables(*t),
            MankuDesign::Budget(bytes) => b.memory_budget(*bytes),
        }
    }
}

impl MihSpec {
    /// The builder of these parameters.
    pub fn builder(&self) -> crate::index::MultiIndexBuilder {
        let mut b = MultiIndex::builder().fallback(self.fallback);
        if let Some(m) = self.substrings {
            b = b.substrings(m);
        }
        if let Some(d) = self.delta_limit {
            b = b.delta_limit(d);
        }
        b
    }
}

impl PermutationSpec {
    /// The builder of these parameters.
    pub fn builder(&self) -> crate::index::PermutationBuilder {
        PermutationIndex::builder()
            .permutations(self.permutations)
            .beam(self.beam)
            .seed(self.seed)
    }
}

impl GraphSpec {
    /// The builder of these parameters.
    pub fn builder(&self) -> GraphBuilder {
        GraphIndex::builder()
            .m(self.m)
            .ef(self.ef)
            .ef_construction(self.ef_construction)
            .seed(self.seed)
            .fallback(self.fallback)
    }
}

impl FromStr for IndexSpec {
    type Err = Error;

    /// Parses the text form (see the [module documentation](self)).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (`index spec`) naming the unknown kind or key, the
    /// repeated key, or the value that is not valid.
    fn from_str(s: &str) -> Result<Self> {
        let t = SpecText::parse(WHAT, s)?;
        let kind = t.kind_in("index kind", KINDS)?.name;
        let pairs = t.pairs();
        Ok(match kind {
            "linear" => IndexSpec::Linear,
            "manku" => {
                let mut m = MankuSpec::default();
                let mut design_keys = 0;
                for &(k, v) in pairs {
                    match k {
                        "k" => m.radius = number(k, v)?,
                        "levels" | "blocks" => {
                            let l = levels(k, v)?;
                            if k == "blocks" && l.len() != 1 {
                                return Err(bad(format!("`blocks={v}`: one number of blocks")));
                            }
                            m.design = MankuDesign::Levels(l);
                        }
                        "tables" => m.design = MankuDesign::MaxTables(positive(k, v)?),
                        _ => m.design = MankuDesign::Budget(number(k, v)?),
                    }
                    design_keys += usize::from(k != "k");
                }
                if design_keys > 1 {
                    return Err(bad("give at most one of levels, blocks, tables and budget"));
                }
                IndexSpec::Manku(m)
            }
            "mih" => {
                let mut m = MihSpec::default();
                for &(k, v) in pairs {
                    match k {
                        "m" => m.substrings = Some(positive(k, v)?),
                        "delta" => m.delta_limit = Some(positive(k, v)?),
                        _ => {
                            m.fallback = v.parse().map_err(|_| {
                                bad(format!("`fallback={v}`: expected true or false"))
                            })?
                        }
                    }
                }
                IndexSpec::Mih(m)
            }
            "graph" => {
                let mut g = GraphSpec::default();
                for &(k, v) in pairs {
                    match k {
                        "m" => g.m = positive(k, v)?,
                        "ef" => g.ef = positive(k, v)?,
                        "efc" => g.ef_construction = positive(k, v)?,
                        "seed" => g.seed = number(k, v)?,
                        _ => {
                            g.fallback = v.parse().map_err(|_| {
                                bad(format!("`fallback={v}`: expected true or false"))
                            })?
                        }
                    }
                }
                if g.m < 2 {
                    return Err(bad(format!("`m={}`: must be at least 2", g.m)));
                }
                IndexSpec::Graph(g)
            }
            _ => {
                let mut p = PermutationSpec::default();
                for &(k, v) in pairs {
                    match k {
                        "q" => p.permutations = positive(k, v)?,
                        "beam" => p.beam = positive(k, v)?,
                        _ => p.seed = number(k, v)?,
                    }
                }
                IndexSpec::Permutation(p)
            }
        })
    }
}

impl fmt::Display for IndexSpec {
    /// The text form: the kind, then the parameters that differ from their defaults.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut params: Vec<(&str, String)> = Vec::new();
        match self {
            IndexSpec::Linear => {}
            IndexSpec::Manku(m) => {
                if m.radius != DEFAULT_RADIUS {
                    params.push(("k", m.radius.to_string()));
                }
                match &m.design {
                    MankuDesign::Planned => {}
                    MankuDesign::Levels(l) if l.is_empty() => {
                        params.push(("levels", "scan".into()))
                    }
                    MankuDesign::Levels(l) => {
                        let l: Vec<String> = l.iter().map(ToString::to_string).collect();
                        params.push(("levels", l.join("+")));
                    }
                    MankuDesign::MaxTables(t) => params.push(("tables", t.to_string())),
                    MankuDesign::Budget(b) => params.push(("budget", b.to_string())),
                }
            }
            IndexSpec::Mih(m) => {
                if let Some(s) = m.substrings {
                    params.push(("m", s.to_string()));
                }
                if let Some(d) = m.delta_limit {
                    params.push(("delta", d.to_string()));
                }
                if !m.fallback {
                    params.push(("fallback", "false".into()));
                }
            }
            IndexSpec::Permutation(p) => {
                let d = PermutationSpec::default();
                if p.permutations != d.permutations {
                    params.push(("q", p.permutations.to_string()));
                }
                if p.beam != d.beam {
                    params.push(("beam", p.beam.to_string()));
                }
                if p.seed != d.seed {
                    params.push(("seed", p.seed.to_string()));
                }
            }
            IndexSpec::Graph(g) => {
                let d = GraphSpec::default();
                if g.m != d.m {
                    params.push(("m", g.m.to_string()));
                }
                if g.ef != d.ef {
                    params.push(("ef", g.ef.to_string()));
                }
                if g.ef_construction != d.ef_construction {
                    params.push(("efc", g.ef_construction.to_string()));
                }
                if g.seed != d.seed {
                    params.push(("seed", g.seed.to_string()));
                }
                if !g.fallback {
                    params.push(("fallback", "false".into()));
                }
            }
        }
        grammar::write(f, self.kind(), &params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip() {
        for s in [
            "linear",
            "manku",
            "manku:k=2",
            "manku:levels=4+4",
            "manku:k=1,levels=3",
            "manku:levels=scan",
            "manku:tables=10",
            "manku:k=4,budget=1000000",
            "mih",
            "mih:m=4",
            "mih:m=4,delta=100,fallback=false",
            "permutation",
            "permutation:q=64,beam=128",
            "permutation:seed=7",
            "graph",
            "graph:m=16,ef=128",
            "graph:efc=100,seed=3,fallback=false",
        ] {
            let spec: IndexSpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
            assert_eq!(spec.to_string().parse::<IndexSpec>().unwrap(), spec);
        }
        // Aliases, spaces and defaults written out.
        let spec: IndexSpec = " manku : k = 3 , blocks = 4 ".parse().unwrap();
        assert_eq!(spec.to_string(), "manku:levels=4");
        let spec: IndexSpec = "permutation:q=16,beam=32,seed=0".parse().unwrap();
        assert_eq!(spec, IndexSpec::Permutation(PermutationSpec::default()));
        assert_eq!(IndexSpec::default().to_string(), "manku");
        assert_eq!(
            "permutation"
                .parse::<IndexSpec>()
                .unwrap()
                .with_seed(5)
                .to_string(),
            "permutation:seed=5"
        );
    }

    #[test]
    fn bad_text_forms_are_errors_naming_the_problem() {
        for (s, needle) in [
            ("", "no kind"),
            ("hnsw", "unknown index kind `hnsw`"),
            ("linear:k=3", "no parameter `k`: it takes none"),
            ("manku:r=3", "no parameter `r`"),
            ("manku:k=x", "`k=x`"),
            ("manku:k=3,k=4", "given twice"),
            ("manku:levels=4,tables=3", "at most one"),
            ("manku:blocks=4+4", "one number"),
            ("manku:levels=4+0", "at least 1"),
            ("mih:m=0", "at least 1"),
            ("mih:fallback=maybe", "true or false"),
            ("permutation:q", "key=value"),
            ("permutation:beam=-1", "`beam=-1`"),
            ("graph:m=1", "at least 2"),
            ("graph:ef=0", "at least 1"),
            ("graph:beam=3", "no parameter `beam`"),
        ] {
            let e = s.parse::<IndexSpec>().unwrap_err().to_string();
            assert!(e.contains(needle), "{s:?}: {e}");
        }
    }

    #[test]
    fn kinds_describe_every_parameter_the_parser_takes() {
        for k in kinds() {
            assert!(!k.summary.is_empty());
            let spec: IndexSpec = k.name.parse().unwrap();
            assert_eq!(spec.kind(), k.name);
            assert_eq!(spec.info(), k);
        }
    }
}
