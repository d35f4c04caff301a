//! A durable store for online near-duplicate detection: codes, vectors or documents under
//! `u64` ids, answering radius, cosine and k-NN queries, with an atomic check-and-insert.
//! Embedded here, or served over HTTP by `simlsh serve` (at [`DEFAULT_LISTEN`] unless told
//! otherwise).
//!
//! # What it holds
//!
//! A store is a directory. Each item has an external `u64` id, an `f`-bit code and, for exact
//! cosines, what verification needs ([`Content`]):
//!
//! | content | insert | kept per item | cosine |
//! |---|---|---|---|
//! | [`Content::Codes`] | codes | the code | none (radius and k only) |
//! | [`Content::Vectors`] | dense vectors, signed by the store | the code and the vector normalised to unit length in `f32` (`4·d` bytes; cosines within a few `f32` ulps of the originals', the same values as [`DenseVectors`]) | exact |
//! | [`Content::Text`] | documents, tokenized and signed by the store | the code and the weighted features (a `u64` key and an `f32` weight per distinct feature, normalised: 12 bytes per feature, the same values as [`SparseVectors`]); never the text | exact |
//!
//! The signer and the text model (tokenizer options, stop words, the IDF table) are fixed
//! when the store is created and written into it: opening it elsewhere needs no other file.
//!
//! # Queries ([`Within`])
//!
//! - [`Within::Radius`]: every live item whose code is within Hamming distance `r`
//!   (inclusive), sorted by `(distance, id)`.
//! - [`Within::Cosine`]: every live item whose exact cosine with the query reaches `τ`, among
//!   the candidates within the radius the [planner](crate::estimate::RadiusPlanner) gives for `τ` at
//!   the store's recall target (by default [`DEFAULT_RECALL`]:
//!   a pair at exactly `τ` is a candidate with probability ≥ 0.99, pairs above it more
//!   often), sorted by decreasing cosine then id: the same rule as the batch verified join
//!   at that radius ([`verify`](crate::verify)), every answer checked exactly.
//! - [`Within::Nearest`]: the `k` nearest codes (ties by id), with their exact cosines when
//!   the store keeps vectors or features.
//!
//! # Writes
//!
//! One writer thread applies every change in order ([`Store::apply`]): an
//! [insert](Op::Insert) (replacing the item of the same id), a [removal](Op::Remove), or a
//! [check-and-insert](Op::InsertIfNew), which inserts only when no live item matches the
//! query: the check and the insert happen together, so two near-duplicates sent at the same
//! time never both get in. Writes waiting for the writer are grouped: the writer applies a
//! group, appends its records to the write-ahead log with one write, makes them durable with
//! one `fdatasync` ([`Durability::Sync`], the default), publishes the new state to readers,
//! then acknowledges them. An acknowledged write is visible to every later query and
//! survives `kill -9` and power loss. A write that fails (a full disk) is an error for every
//! change of its group and changes nothing: the log is cut back and the state of the last
//! acknowledged group restored. With [`Durability::Os`] a group is handed to the operating
//! system without `fdatasync`: it survives the process being killed, not a power loss.
//!
//! # Reads
//!
//! Readers never wait for the writer: each query takes the current state (an `Arc`
//! published through `arc-swap`) and searches it; the writer changes its own copy,
//! copy-on-write, and publishes after each group.
//!
//! # Layout and compaction
//!
//! Recent items live in a small in-memory delta (scanned by every query) that becomes an
//! immutable segment, with its own index ([`IndexSpec`], by default Manku's permuted tables
//! for radius 3 at `f ≤ 64` and multi-index hashing above), every `delta_limit` items. A
//! background thread merges segments of similar size (eight of a size class into one),
//! rewrites segments with many removed items, and checkpoints: it writes the segments not
//! yet on disk and a new manifest, atomically, then deletes the log files and segments the
//! manifest no longer needs. Every item is thus rewritten `O(log n)` times, and adding `m`
//! items to a store of `n` costs `O(m log m)`, not a rebuild of `n`. Segment files use the
//! versioned, checksummed [format](crate::persist::format) and are memory-mapped when opened,
//! so opening a large store costs little and its pages are shared between processes.
//!
//! # Opening, recovery, readers
//!
//! [`Store::open`] takes the store's advisory lock (of its file `writer.lock`,
//! [`crate::fs::lock`]: one writer at a
//! time), reads the manifest, maps the segments (verifying their checksums by default),
//! and replays the log. A torn tail of the last log file (an interrupted write, never
//! acknowledged) is cut off and reported ([`Store::recovery`]); a damaged record followed
//! by valid ones, or a missing log file, is an error, and nothing is rewritten.
//! [`Store::open_read_only`] opens the last checkpoint without the lock, from any number of
//! processes while a writer runs (it does not see the writer's changes since that
//! checkpoint; [`Store::refresh`] moves it to the newest).
//!
//! ```
//! use simlsh::store::{Item, Store, Within};
//!
//! let dir = std::env::temp_dir().join(format!("simlsh-doc-store-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! let store = Store::builder().bits(64).create(&dir)?;
//! let a = store.insert_if_new(1, Item::Code(&[0b1011]), Within::Radius(3))?;
//! assert!(a.inserted);
//! // A near-duplicate (distance 1) is not inserted; the stored item is returned instead.
//! let b = store.insert_if_new(2, Item::Code(&[0b1010]), Within::Radius(3))?;
//! assert!(!b.inserted && b.matches[0].id == 1 && b.matches[0].distance == 1);
//! assert!(store.get(2).is_none() && store.get(1).is_some());
//! store.close()?;
//! // Reopened, the acknowledged insert is there.
//! let store = Store::open(&dir)?;
//! assert_eq!(store.query(Item::Code(&[0b1011]), Within::Radius(0))?[0].id, 1);
//! # store.close()?;
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod background;
mod manifest;
mod rows;
mod segment;
mod view;
mod wal;
mod writer;
mod young;

pub use rows::{Content, Payload};
pub use wal::TornTail;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;

use arc_swap::ArcSwap;

use self::background::Bg;
use self::segment::Segment;
use self::view::{Probe, Reach, SegRef, View};
use self::writer::Job;
use crate::error::{Error, Result};
use crate::estimate::{DEFAULT_RECALL, RadiusPlanner, RadiusRule};
use crate::fs::LockGuard;
use crate::index::{IndexSpec, MankuSpec, MihSpec};
use crate::signature::words_for;
use crate::signers::{AnySigner, Signer, SignerKind, SignerSpec};
use crate::text::Tokenizer;
use crate::verify::{DenseVectors, SparseVectors, Vectors as _};

/// Items a delta holds before it becomes a segment, by default.
pub const DEFAULT_DELTA_LIMIT: usize = 4096;
/// Changes waiting for the writer, by default, beyond which writes are refused as
/// [`Error::Busy`] (backpressure instead of an unbounded queue).
pub const DEFAULT_QUEUE: usize = 1024;
/// Log bytes after which the background thread checkpoints, by default.
pub const DEFAULT_CHECKPOINT_BYTES: u64 = 256 << 20;
/// Largest number of changes in one call of [`Store::apply`].
pub const MAX_BATCH: usize = 100_000;
/// The signer of a vector store, by default.
pub const DEFAULT_SIGNER_VECTORS: SignerKind = SignerKind::HashedGaussian;
/// The code width of a vector or text store, by default.
pub const DEFAULT_BITS_SIGNED: usize = 256;
/// The address a store is served at, by default (`simlsh serve`'s `--listen`, the server's
/// configuration, and the URL of Python's `simlsh.Client`): a loopback address, so that a
/// store is not exposed beyond the machine unless asked (a server refuses an address that is
/// not loopback without an access token).
///
/// ```
/// use simlsh::store::DEFAULT_LISTEN;
///
/// assert!(DEFAULT_LISTEN.ip().is_loopback());
/// assert_eq!(DEFAULT_LISTEN.to_string(), "127.0.0.1:7700");
/// ```
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7700));

/// An item to insert or to query with.
#[derive(Clone, Copy, Debug)]
pub enum Item<'a> {
    /// A code of the store's width (`⌈f/64⌉` words, bits beyond `f` zero).
    Code(&'a [u64]),
    /// A dense vector of a vector store, signed by the store.
    Vector(&'a [f32]),
    /// A document of a text store, tokenized and signed by the store.
    Text(&'a str),
}

/// How far a query reaches (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Within {
    /// Hamming distance at most `r`.
    Radius(u32),
    /// Exact cosine at least `τ` (vector and text stores).
    Cosine(f64),
    /// The `k` nearest codes.
    Nearest(usize),
}

impl Within {
    /// The reach of exactly one of a radius, a cosine and a `k` (as front ends take them).
    ///
    /// ```
    /// use simlsh::store::Within;
    ///
    /// assert_eq!(Within::one_of(None, Some(0.9), None)?, Within::Cosine(0.9));
    /// assert!(Within::one_of(Some(3), None, Some(10)).is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless exactly one is given.
    pub fn one_of(radius: Option<u32>, cosine: Option<f64>, k: Option<usize>) -> Result<Within> {
        match (radius, cosine, k) {
            (Some(r), None, None) => Ok(Within::Radius(r)),
            (None, Some(c), None) => Ok(Within::Cosine(c)),
            (None, None, Some(k)) => Ok(Within::Nearest(k)),
            _ => Err(Error::param(
                "within",
                "give exactly one of `radius`, `cosine` and `k`",
            )),
        }
    }
}

/// A stored item found by a query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Match {
    /// Its id.
    pub id: u64,
    /// Hamming distance of its code to the query's.
    pub distance: u32,
    /// Its exact cosine with the query, when the store and the query have vectors or
    /// features.
    pub cosine: Option<f64>,
}

/// A stored item.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Its id.
    pub id: u64,
    /// Its code.
    pub code: Vec<u64>,
    /// Its normalised vector or features.
    pub payload: Payload,
}

/// An item signed and checked, ready for the writer ([`Store::prepare`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    /// The code.
    pub code: Vec<u64>,
    /// The normalised vector or features.
    pub payload: Payload,
}

/// A change.
#[derive(Clone, Debug)]
pub enum Op {
    /// Stores an item under `id`, replacing the item stored under it.
    Insert {
        /// The id.
        id: u64,
        /// The item.
        item: Prepared,
    },
    /// Stores an item under `id` only if no live item matches it `within`.
    InsertIfNew {
        /// The id.
        id: u64,
        /// The item.
        item: Prepared,
        /// The reach of the check.
        within: Within,
    },
    /// Removes the item under `id`.
    Remove {
        /// The id.
        id: u64,
    },
}

/// What a change did.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Inserted; `replaced` when an item was stored under the id.
    Inserted {
        /// An item was stored under the id and is replaced.
        replaced: bool,
    },
    /// A check-and-insert.
    Checked(CheckOutcome),
    /// Removed when `found`.
    Removed {
        /// The id was stored.
        found: bool,
    },
}

/// What a check-and-insert did.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckOutcome {
    /// True when no live item matched and the item was inserted.
    pub inserted: bool,
    /// The live items that matched (empty when inserted).
    pub matches: Vec<Match>,
}

/// When a write is acknowledged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// After its log records are on disk (`fdatasync` once per group): survives `kill -9`
    /// and power loss. The default.
    #[default]
    Sync,
    /// After its log records are written to the operating system: survives `kill -9`, not a
    /// power loss or a crash of the system.
    Os,
}

impl Durability {
    /// `sync` or `os`, the text form [`FromStr`](std::str::FromStr) reads.
    pub fn name(&self) -> &'static str {
        match self {
            Durability::Sync => "sync",
            Durability::Os => "os",
        }
    }
}

impl std::str::FromStr for Durability {
    type Err = Error;

    /// `sync` or `os`.
    ///
    /// ```
    /// use simlsh::store::Durability;
    ///
    /// assert_eq!("os".parse::<Durability>()?, Durability::Os);
    /// assert!("fsync".parse::<Durability>().is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "sync" => Ok(Durability::Sync),
            "os" => Ok(Durability::Os),
            other => Err(Error::param("durability", format!("`{other}` (sync, os)"))),
        }
    }
}

/// The store's fixed settings, recorded in its manifest.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) bits: usize,
    pub(crate) content: Content,
    pub(crate) index: IndexSpec,
    pub(crate) recall: f64,
    pub(crate) signer: Option<SignerSpec>,
    pub(crate) tokenizer: Option<Tokenizer>,
    pub(crate) delta_limit: usize,
}

/// Builder of a new store: `Default`, chained setters, [`create`](Self::create).
#[derive(Clone, Debug)]
pub struct StoreBuilder {
    content: Option<Content>,
    bits: Option<usize>,
    index: Option<IndexSpec>,
    recall: Option<f64>,
    signer: Option<SignerSpec>,
    seed: u64,
    tokenizer: Option<Tokenizer>,
    delta_limit: Option<usize>,
}

impl Default for StoreBuilder {
    /// Every choice left to [`create`](Self::create) but the seed, which is the signers'
    /// ([`SignerSpec::default`]'s).
    fn default() -> Self {
        StoreBuilder {
            content: None,
            bits: None,
            index: None,
            recall: None,
            signer: None,
            seed: SignerSpec::default().seed,
            tokenizer: None,
            delta_limit: None,
        }
    }
}

impl StoreBuilder {
    /// What the store keeps (default [`Content::Codes`]; [`Content::Text`] when a tokenizer
    /// is set).
    pub fn content(mut self, c: Content) -> Self {
        self.content = Some(c);
        self
    }

    /// Code width `f` (default 64 for codes, [`DEFAULT_BITS_SIGNED`] for vectors and text).
    pub fn bits(mut self, f: usize) -> Self {
        self.bits = Some(f);
        self
    }

    /// The index of each segment (default `manku:k=3` for `f ≤ 64`, `mih` above).
    pub fn index(mut self, spec: IndexSpec) -> Self {
        self.index = Some(spec);
        self
    }

    /// Recall target at the threshold of cosine queries (default
    /// [`DEFAULT_RECALL`]).
    pub fn recall(mut self, r: f64) -> Self {
        self.recall = Some(r);
        self
    }

    /// The signer kind of a vector or text store (default [`DEFAULT_SIGNER_VECTORS`], and for
    /// text [`SignerKind::default_for`] the store's width); its width and seed are the store's.
    pub fn signer(mut self, spec: SignerSpec) -> Self {
        self.signer = Some(spec);
        self
    }

    /// Seed of the signer (default the signers', [`SignerSpec::default`]'s).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The seed of the signer ([`seed`](Self::seed)).
    pub fn seed_of(&self) -> u64 {
        self.seed
    }

    /// The text model of a text store (default [`Tokenizer::default`]); setting it makes the
    /// store a text store.
    pub fn tokenizer(mut self, t: Tokenizer) -> Self {
        self.tokenizer = Some(t);
        self
    }

    /// Items of the in-memory delta before it becomes a segment (default
    /// [`DEFAULT_DELTA_LIMIT`]).
    pub fn delta_limit(mut self, n: usize) -> Self {
        self.delta_limit = Some(n);
        self
    }

    /// The checked configuration.
    fn config(self) -> Result<Config> {
        let content = self.content.unwrap_or(if self.tokenizer.is_some() {
            Content::Text
        } else {
            Content::Codes
        });
        let bits = self.bits.unwrap_or(match content {
            Content::Codes => 64,
            _ => DEFAULT_BITS_SIGNED,
        });
        crate::index::check_bits(bits)?;
        if let Content::Vectors { dim } = content
            && dim == 0
        {
            return Err(Error::param("dim", "a vector store needs a dimension ≥ 1"));
        }
        if self.tokenizer.is_some() && content != Content::Text {
            return Err(Error::param(
                "tokenizer",
                format!(
                    "a tokenizer is for text stores, not a {} store",
                    content.name()
                ),
            ));
        }
        let recall = self.recall.unwrap_or(DEFAULT_RECALL);
        if !(recall > 0.0 && recall < 1.0) {
            return Err(Error::param(
                "recall",
                format!("must lie strictly between 0 and 1, got {recall}"),
            ));
        }
        let delta_limit = self.delta_limit.unwrap_or(DEFAULT_DELTA_LIMIT);
        if !(1..=1 << 24).contains(&delta_limit) {
            return Err(Error::param("delta_limit", "must lie in 1..=2^24"));
        }
        let index = match self.index {
            Some(i) => i,
            None if bits <= 64 => IndexSpec::Manku(MankuSpec::default()),
            None => IndexSpec::Mih(MihSpec::default()),
        };
        let signer = match content {
            Content::Codes => {
                if self.signer.is_some() {
                    return Err(Error::param("signer", "a code store has no signer"));
                }
                None
            }
            Content::Vectors { dim } => Some(
                self.signer
                    .unwrap_or_else(|| SignerSpec::new(DEFAULT_SIGNER_VECTORS))
                    .bits(bits)
                    .seed(self.seed)
                    .dim(dim as u64),
            ),
            Content::Text => Some(
                self.signer
                    .unwrap_or_else(|| {
                        SignerSpec::new(SignerKind::default_for(
                            crate::signers::InputKind::Text,
                            bits,
                        ))
                    })
                    .bits(bits)
                    .seed(self.seed),
            ),
        };
        let tokenizer = match content {
            Content::Text => Some(self.tokenizer.unwrap_or_default()),
            _ => None,
        };
        let config = Config {
            bits,
            content,
            index,
            recall,
            signer,
            tokenizer,
            delta_limit,
        };
        // Check that the signer and the index build.
        build_signer(&config)?;
        Ok(config)
    }

    /// Creates an empty store in directory `path` (created if missing; it must be empty)
    /// and opens it with the default [`OpenOptions`].
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for settings out of range; [`Error::Io`] when the
    /// directory is not empty or cannot be written.
    pub fn create(self, path: &Path) -> Result<Store> {
        let config = self.config()?;
        init(path, &config, None)?;
        Store::open(path)
    }

    /// Creates a store holding `items` under `ids` from the start, in one segment built at
    /// once (no log): the fast way to load an existing corpus, then
    /// [`open`](Store::open) it. Ids must be distinct.
    ///
    /// # Errors
    /// As [`create`](Self::create); [`Error::LengthMismatch`] when there is not one item per
    /// id; [`Error::InvalidParameter`] for a repeated id or an item that does not fit.
    pub fn create_with(self, path: &Path, ids: &[u64], items: &[Prepared]) -> Result<()> {
        let config = self.config()?;
        if ids.len() != items.len() {
            return Err(Error::LengthMismatch {
                what: "items vs ids",
                left: items.len(),
                right: ids.len(),
            });
        }
        let mut order: Vec<u32> = (0..ids.len() as u32).collect();
        order.sort_unstable_by_key(|&i| ids[i as usize]);
        let words = words_for(config.bits);
        let mut rows = rows::Rows::with_capacity(words, config.content, ids.len());
        for (k, &i) in order.iter().enumerate() {
            let i = i as usize;
            if k > 0 && ids[order[k - 1] as usize] == ids[i] {
                return Err(Error::param("id", format!("id {} is repeated", ids[i])));
            }
            check_prepared(&config, &items[i])?;
            rows.push(ids[i], &items[i].code, items[i].payload.as_ref());
        }
        init(path, &config, Some(rows))
    }

    /// [`create_with`](Self::create_with) for a store of codes given as one row-major
    /// array (`⌈f/64⌉` words per id).
    ///
    /// # Errors
    /// As [`create_with`](Self::create_with).
    pub fn create_with_codes(self, path: &Path, ids: &[u64], codes: &[u64]) -> Result<()> {
        let config = self.config()?;
        if config.content != Content::Codes {
            return Err(Error::param(
                "content",
                "codes alone fill a code store only",
            ));
        }
        let words = words_for(config.bits);
        let n = crate::index::check_codes(config.bits, codes)?;
        if n != ids.len() {
            return Err(Error::LengthMismatch {
                what: "codes vs ids",
                left: n,
                right: ids.len(),
            });
        }
        let mut order: Vec<u32> = (0..ids.len() as u32).collect();
        use rayon::prelude::*;
        order.par_sort_unstable_by_key(|&i| ids[i as usize]);
        let mut sorted_ids = Vec::with_capacity(n);
        let mut sorted_codes = Vec::with_capacity(codes.len());
        for &i in &order {
            let i = i as usize;
            if sorted_ids.last() == Some(&ids[i]) {
                return Err(Error::param("id", format!("id {} is repeated", ids[i])));
            }
            sorted_ids.push(ids[i]);
            sorted_codes.extend_from_slice(&codes[i * words..(i + 1) * words]);
        }
        drop(order);
        let rows = rows::Rows {
            words,
            ids: sorted_ids.into(),
            codes: sorted_codes.into(),
            pay: rows::Pay::None,
        };
        init(path, &config, Some(rows))
    }
}

/// Writes a new store: its first segment (if any), the manifest, the first log file.
fn init(path: &Path, config: &Config, rows: Option<rows::Rows>) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(path).map_err(io)?;
    if std::fs::read_dir(path).map_err(io)?.next().is_some() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "a new store needs an empty directory",
        )));
    }
    let _lock = take_lock(path, true)?;
    let mut state = manifest::State {
        lsn: 0,
        next_segment: 1,
        segments: Vec::new(),
    };
    if let Some(rows) = rows.filter(|r| r.len() > 0) {
        let seg = Segment::build(1, config.bits, &config.index, rows)?;
        seg.write(path, config.content)?;
        state.segments.push((1, Arc::default()));
        state.next_segment = 2;
    }
    wal::Wal::create(path, 1)?;
    manifest::write(path, config, &state)?;
    crate::fs::sync_dir(path)
}

/// The writer's lock file of the store at `dir`: an empty file that is never replaced (the
/// manifest cannot be locked: every checkpoint renames a new one over it, and a lock on
/// the old file would not exclude a writer that opens the new one).
fn lock_path(dir: &Path) -> PathBuf {
    dir.join("writer.lock")
}

/// Takes the writer's lock of the store at `dir` (`creating`: a new store, the lock file
/// made first), waiting for it or `None` when another process holds it. The lock file of a
/// store that has a manifest but none (made before it existed) is created.
fn take_lock(dir: &Path, creating: bool) -> Result<Option<LockGuard>> {
    let p = lock_path(dir);
    if !creating && !manifest::path(dir).exists() {
        return Err(Error::Io {
            path: manifest::path(dir),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => return Err(Error::Io { path: p, source }),
    }
    if creating {
        crate::fs::lock_exclusive(&p).map(Some)
    } else {
        crate::fs::try_lock_exclusive(&p)
    }
}

fn build_signer(config: &Config) -> Result<Option<AnySigner>> {
    config
        .signer
        .as_ref()
        .map(|s| {
            let dim = match config.content {
                Content::Vectors { dim } => Some(dim as u64),
                _ => None,
            };
            s.build(dim)
        })
        .transpose()
}

/// Checks that a prepared item fits the store.
fn check_prepared(config: &Config, p: &Prepared) -> Result<()> {
    crate::index::check_code(config.bits, &p.code)?;
    let ok = match (config.content, &p.payload) {
        (Content::Codes, Payload::None) => true,
        (Content::Vectors { dim }, Payload::Dense(v)) => v.len() == dim,
        (Content::Text, Payload::Sparse(k, w)) => {
            k.len() == w.len() && k.windows(2).all(|p| p[0] < p[1])
        }
        _ => false,
    };
    if !ok {
        return Err(Error::param(
            "item",
            format!(
                "does not fit a {} store (a {} store keeps {})",
                config.content.name(),
                config.content.name(),
                match config.content {
                    Content::Codes => "codes".to_string(),
                    Content::Vectors { dim } => format!("vectors of dimension {dim}"),
                    Content::Text => "documents' features".to_string(),
                }
            ),
        ));
    }
    Ok(())
}

/// Options of [`Store::open`]: `Default`, chained setters.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    durability: Durability,
    verify: bool,
    queue: usize,
    checkpoint_bytes: u64,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            durability: Durability::Sync,
            verify: true,
            queue: DEFAULT_QUEUE,
            checkpoint_bytes: DEFAULT_CHECKPOINT_BYTES,
        }
    }
}

impl OpenOptions {
    /// Default options: [`Durability::Sync`], checksums verified, [`DEFAULT_QUEUE`],
    /// [`DEFAULT_CHECKPOINT_BYTES`].
    pub fn new() -> Self {
        Self::default()
    }

    /// When writes are acknowledged ([`durability`](Self::durability)).
    pub fn durability_of(&self) -> Durability {
        self.durability
    }

    /// Whether opening verifies the segments' checksums ([`verify`](Self::verify)).
    pub fn verifies(&self) -> bool {
        self.verify
    }

    /// When writes are acknowledged (default [`Durability::Sync`]).
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }

    /// Verify the checksums of the manifest's segments when opening (default `true`: reads
    /// every segment once, detecting damage; [`verify`] also checks every index's
    /// invariants).
    pub fn verify(mut self, on: bool) -> Self {
        self.verify = on;
        self
    }

    /// Calls to [`Store::apply`] that may wait for the writer (default [`DEFAULT_QUEUE`]);
    /// beyond, writes are refused as [`Error::Busy`].
    pub fn queue(mut self, n: usize) -> Self {
        self.queue = n.max(1);
        self
    }

    /// Log bytes after which the store checkpoints (default [`DEFAULT_CHECKPOINT_BYTES`]).
    pub fn checkpoint_bytes(mut self, n: u64) -> Self {
        self.checkpoint_bytes = n.max(1);
        self
    }

    /// Opens the store at `path` for reading and writing.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when another process has it open for writing;
    /// [`Error::Io`], [`Error::Format`], [`Error::Checksum`] naming the damaged file.
    pub fn open(&self, path: &Path) -> Result<Store> {
        Store::open_with(path, self, false)
    }
}

/// What opening found in the log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Log records replayed over the last checkpoint.
    pub replayed: u64,
    /// A torn tail cut off (an interrupted, unacknowledged write), when there was one.
    pub torn: Option<TornTail>,
}

/// What [`verify`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verified {
    /// Live items at the last checkpoint.
    pub items: u64,
    /// Segments of the last checkpoint.
    pub segments: usize,
    /// The log record of the last checkpoint.
    pub checkpoint_lsn: u64,
    /// Whole log records after it.
    pub log_records: u64,
    /// The last whole log record.
    pub last_lsn: u64,
    /// A torn tail (an interrupted, unacknowledged write) that opening for writing would
    /// cut; nothing is changed here.
    pub torn: Option<TornTail>,
}

/// Checks a store without changing anything and without its lock (so also while a writer
/// runs, against its last checkpoint): the manifest's and every segment's checksum, every
/// index's invariants, and every log record's framing, check, sequence and contents.
///
/// # Errors
/// [`Error::Checksum`], [`Error::Format`] or [`Error::InvalidField`] naming the damaged file
/// (a damaged log record followed by valid ones included); [`Error::Io`].
pub fn verify(path: &Path) -> Result<Verified> {
    let (config, state, segs) = load_checkpoint(path, segment::Check::Full, true)?;
    let words = words_for(config.bits);
    let replay = wal::replay(path, state.lsn, words, config.content, false, |_, _| Ok(()))?;
    Ok(Verified {
        items: segs.iter().map(|s| s.live() as u64).sum(),
        segments: segs.len(),
        checkpoint_lsn: state.lsn,
        log_records: replay.applied,
        last_lsn: replay.last,
        torn: replay.torn,
    })
}

/// Figures of a store ([`Store::stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Live items.
    pub items: u64,
    /// Code width.
    pub bits: usize,
    /// What the store keeps.
    pub content: &'static str,
    /// Segments.
    pub segments: usize,
    /// Items in the in-memory delta (removed ones included).
    pub delta: usize,
    /// Removed items still held by segments (until compaction).
    pub dead: u64,
    /// The last acknowledged log record.
    pub lsn: u64,
    /// The log record of the last checkpoint.
    pub checkpoint_lsn: u64,
    /// Log bytes written since the last checkpoint.
    pub log_bytes: u64,
    /// Heap bytes of the data (segments, delta, dead sets).
    pub heap_bytes: usize,
    /// Bytes of memory-mapped segment files.
    pub mapped_bytes: usize,
    /// Writes acknowledged since opening.
    pub writes: u64,
    /// Groups committed since opening (one log write and sync each).
    pub groups: u64,
    /// Merges done since opening.
    pub merges: u64,
    /// Checkpoints done since opening.
    pub checkpoints: u64,
    /// The last error of the background work (a checkpoint on a full disk), if any.
    pub background_error: Option<String>,
    /// True when opened read-only.
    pub read_only: bool,
}

/// Counters shared by the threads.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) log_bytes: AtomicU64,
    pub(crate) writes: AtomicU64,
    pub(crate) groups: AtomicU64,
    pub(crate) merges: AtomicU64,
    pub(crate) checkpoints: AtomicU64,
    pub(crate) checkpoint_lsn: AtomicU64,
    pub(crate) next_segment: AtomicU64,
    /// True while the background thread plans or runs a merge.
    pub(crate) merging: std::sync::atomic::AtomicBool,
}

/// What every thread of a store shares.
pub(crate) struct Inner {
    pub(crate) dir: PathBuf,
    pub(crate) config: Config,
    signer: Option<AnySigner>,
    pub(crate) view: ArcSwap<View>,
    pub(crate) counters: Counters,
    pub(crate) background_error: Mutex<Option<String>>,
    pub(crate) checkpoint_bytes: u64,
    radii: RwLock<HashMap<u64, u32>>,
}

struct Threads {
    jobs: SyncSender<Job>,
    bg: mpsc::Sender<Bg>,
    writer: JoinHandle<()>,
    background: JoinHandle<()>,
}

/// A store (see the [module docs](self)). Every method takes `&self`: share it between
/// threads (`Arc<Store>`).
pub struct Store {
    inner: Arc<Inner>,
    threads: Mutex<Option<Threads>>,
    recovery: Recovery,
    read_only: bool,
    /// The writer's lock, released when the writer stops.
    lock: Mutex<Option<LockGuard>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.inner.dir)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// A builder of a new store.
    pub fn builder() -> StoreBuilder {
        StoreBuilder::default()
    }

    /// Opens the store at `path` with the default [`OpenOptions`].
    ///
    /// # Errors
    /// As [`OpenOptions::open`].
    pub fn open(path: &Path) -> Result<Store> {
        OpenOptions::default().open(path)
    }

    /// Opens the last checkpoint of the store at `path` for reading only, without its lock:
    /// any number of processes may do so while one writer runs. Writes are refused as
    /// [`Error::Unavailable`].
    ///
    /// # Errors
    /// As [`OpenOptions::open`]. A checkpoint that replaces the files while they are being
    /// opened is retried.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        Store::open_with(path, &OpenOptions::default(), true)
    }

    fn open_with(path: &Path, opts: &OpenOptions, read_only: bool) -> Result<Store> {
        let lock = if read_only {
            None
        } else {
            Some(take_lock(path, false)?.ok_or_else(|| {
                Error::Unavailable(format!(
                    "{}: the store is open for writing in another process",
                    path.display()
                ))
            })?)
        };
        let check = if opts.verify {
            segment::Check::Checksums
        } else {
            segment::Check::Shapes
        };
        let (config, state, segs) = load_checkpoint(path, check, read_only)?;
        let signer = build_signer(&config)?;
        let words = words_for(config.bits);
        let mut view = View::new(words, config.content);
        view.lsn = state.lsn;
        view.segs = segs;
        view.live = view.segs.iter().map(|s| s.live() as u64).sum();
        let counters = Counters::default();
        counters.checkpoint_lsn.store(state.lsn, Ordering::Relaxed);
        counters
            .next_segment
            .store(state.next_segment, Ordering::Relaxed);
        let inner = Arc::new(Inner {
            dir: path.to_path_buf(),
            config,
            signer,
            view: ArcSwap::from_pointee(view.clone()),
            counters,
            background_error: Mutex::new(None),
            checkpoint_bytes: opts.checkpoint_bytes,
            radii: RwLock::new(HashMap::new()),
        });
        if read_only {
            return Ok(Store {
                inner,
                threads: Mutex::new(None),
                recovery: Recovery::default(),
                read_only,
                lock: Mutex::new(None),
            });
        }
        let persisted = view.segs.iter().map(|s| s.seg.no).collect();
        background::remove_unreferenced(path, &persisted);
        let (w, recovery) = writer::Writer::recover(Arc::clone(&inner), view, opts.durability)?;
        let (jobs, job_rx) = mpsc::sync_channel(opts.queue);
        let (bg, bg_rx) = mpsc::channel();
        let writer = {
            let bg = bg.clone();
            std::thread::Builder::new()
                .name("simlsh-store-writer".into())
                .spawn(move || w.run(job_rx, bg))
                .map_err(|e| Error::Unavailable(format!("cannot start the writer: {e}")))?
        };
        let background = {
            let b = background::Background::new(Arc::clone(&inner), jobs.clone(), persisted);
            std::thread::Builder::new()
                .name("simlsh-store-background".into())
                .spawn(move || b.run(bg_rx))
                .map_err(|e| Error::Unavailable(format!("cannot start compaction: {e}")))?
        };
        Ok(Store {
            inner,
            threads: Mutex::new(Some(Threads {
                jobs,
                bg,
                writer,
                background,
            })),
            recovery,
            read_only,
            lock: Mutex::new(lock),
        })
    }

    /// What opening found in the log (replayed records, a torn tail cut off).
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Code width `f`.
    pub fn bits(&self) -> usize {
        self.inner.config.bits
    }

    /// What the store keeps.
    pub fn content(&self) -> Content {
        self.inner.config.content
    }

    /// The index of the segments.
    pub fn index_spec(&self) -> &IndexSpec {
        &self.inner.config.index
    }

    /// The signer of a vector or text store.
    pub fn signer_spec(&self) -> Option<&SignerSpec> {
        self.inner.config.signer.as_ref()
    }

    /// The text model of a text store.
    pub fn tokenizer(&self) -> Option<&Tokenizer> {
        self.inner.config.tokenizer.as_ref()
    }

    /// Recall target of cosine queries.
    pub fn recall(&self) -> f64 {
        self.inner.config.recall
    }

    /// True when opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Signs and checks an item (on the calling thread), for [`apply`](Self::apply):
    /// codes are checked for width and padding, vectors for dimension and finite values
    /// (and normalised), documents tokenized with the store's model.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`], [`Error::LengthMismatch`], [`Error::PaddingBits`],
    /// [`Error::NonFinite`] naming what does not fit; a code given to a vector or text
    /// store is refused (it cannot be verified).
    pub fn prepare(&self, item: Item<'_>) -> Result<Prepared> {
        let p = self.prepare_query(item)?;
        if self.inner.config.content.has_cosine() && p.payload == Payload::None {
            return Err(Error::param(
                "item",
                format!(
                    "a {} store keeps what exact cosines need: insert {}, not codes",
                    self.inner.config.content.name(),
                    if self.inner.config.content == Content::Text {
                        "documents"
                    } else {
                        "vectors"
                    }
                ),
            ));
        }
        Ok(p)
    }

    /// Signs and checks a query item: as [`prepare`](Self::prepare), but a code is accepted
    /// by every store (for radius and k-NN queries).
    ///
    /// # Errors
    /// As [`prepare`](Self::prepare).
    pub fn prepare_query(&self, item: Item<'_>) -> Result<Prepared> {
        let c = &self.inner.config;
        match item {
            Item::Code(code) => {
                crate::index::check_code(c.bits, code)?;
                Ok(Prepared {
                    code: code.to_vec(),
                    payload: Payload::None,
                })
            }
            Item::Vector(v) => {
                let Content::Vectors { dim } = c.content else {
                    return Err(Error::param(
                        "item",
                        format!("a {} store takes no vectors", c.content.name()),
                    ));
                };
                if v.len() != dim {
                    return Err(Error::DimensionMismatch {
                        expected: dim as u64,
                        got: v.len() as u64,
                    });
                }
                let view = ndarray::ArrayView2::from_shape((1, dim), v)
                    .map_err(|e| Error::param("vector", e.to_string()))?;
                let norm = DenseVectors::new(view)?;
                let signer = self
                    .inner
                    .signer
                    .as_ref()
                    .expect("a vector store has a signer");
                let code = signer.sign_dense_row(v)?;
                Ok(Prepared {
                    code: code.words().to_vec(),
                    payload: Payload::Dense(norm.row(0).to_vec()),
                })
            }
            Item::Text(t) => {
                let (Some(tok), Some(signer)) = (&c.tokenizer, self.inner.signer.as_ref()) else {
                    return Err(Error::param(
                        "item",
                        format!("a {} store takes no documents", c.content.name()),
                    ));
                };
                let f = tok.features(t);
                let code = f.sign(signer)?;
                let v = SparseVectors::from_features([&f])?;
                let (k, w) = v.row(0);
                debug_assert!(v.len() == 1);
                Ok(Prepared {
                    code: code.words().to_vec(),
                    payload: Payload::Sparse(k.to_vec(), w.to_vec()),
                })
            }
        }
    }

    /// The reach of `within` for a query with `payload`.
    fn reach(&self, within: Within, payload: &Payload) -> Result<Reach> {
        Ok(match within {
            Within::Radius(radius) => Reach::Radius {
                radius,
                cosine: None,
            },
            Within::Nearest(k) => Reach::Nearest(k),
            Within::Cosine(t) => {
                if !self.inner.config.content.has_cosine() {
                    return Err(Error::param(
                        "within",
                        "a code store keeps no vectors: query by radius or k",
                    ));
                }
                if *payload == Payload::None {
                    return Err(Error::param(
                        "within",
                        "a cosine threshold needs a query vector or document, not a code",
                    ));
                }
                Reach::Radius {
                    radius: self.planned_radius(t)?,
                    cosine: Some(t),
                }
            }
        })
    }

    /// The candidate radius of cosine threshold `t` (planned once per threshold).
    pub fn planned_radius(&self, t: f64) -> Result<u32> {
        let key = t.to_bits();
        if let Some(&r) = self.inner.radii.read().expect("not poisoned").get(&key) {
            return Ok(r);
        }
        let plan = RadiusPlanner::new(t)
            .bits(self.inner.config.bits as u64)
            .rule(RadiusRule::TargetRecall(self.inner.config.recall))
            .plan()?;
        let r = plan.radius as u32;
        let mut m = self.inner.radii.write().expect("not poisoned");
        if m.len() < 4096 {
            m.insert(key, r);
        }
        Ok(r)
    }

    /// The live items matching `item` within `within` (see the [module docs](self)).
    ///
    /// # Errors
    /// As [`prepare_query`](Self::prepare_query); a cosine threshold on a code store or
    /// with a code.
    pub fn query(&self, item: Item<'_>, within: Within) -> Result<Vec<Match>> {
        let p = self.prepare_query(item)?;
        self.query_prepared(&p, within)
    }

    /// [`query`](Self::query) with a prepared item.
    ///
    /// # Errors
    /// As [`query`](Self::query).
    pub fn query_prepared(&self, p: &Prepared, within: Within) -> Result<Vec<Match>> {
        let reach = self.reach(within, &p.payload)?;
        let view = self.inner.view.load();
        let mut out = Vec::new();
        view.search(
            Probe {
                code: &p.code,
                pay: p.payload.as_ref(),
            },
            reach,
            &mut out,
        )?;
        Ok(out)
    }

    /// [`query_prepared`](Self::query_prepared) for many queries at once, with the same
    /// answers: the queries are probed together (in parallel, one pass over the in-memory
    /// delta for all of them).
    ///
    /// # Errors
    /// As [`query`](Self::query).
    pub fn query_batch(&self, qs: &[Prepared], within: Within) -> Result<Vec<Vec<Match>>> {
        let Some(first) = qs.first() else {
            return Ok(Vec::new());
        };
        let reach = self.reach(within, &first.payload)?;
        for q in qs {
            self.reach(within, &q.payload)?;
        }
        let probes: Vec<Probe<'_>> = qs
            .iter()
            .map(|q| Probe {
                code: &q.code,
                pay: q.payload.as_ref(),
            })
            .collect();
        self.inner.view.load().search_batch(&probes, reach)
    }

    /// The live item stored under `id`.
    pub fn get(&self, id: u64) -> Option<Record> {
        self.inner.view.load().get(id)
    }

    /// True when `id` is stored.
    pub fn contains(&self, id: u64) -> bool {
        self.inner.view.load().locate(id).is_some()
    }

    /// Number of live items.
    pub fn len(&self) -> u64 {
        self.inner.view.load().live
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Applies changes in order, atomically with respect to other writers (each one sees
    /// the changes before it, those of this call included), and returns once they are
    /// durable ([`Durability`]) and visible to queries.
    ///
    /// # Errors
    /// [`Error::Busy`] when the writer's queue is full (nothing applied: retry later);
    /// [`Error::Unavailable`] when the store is read-only or closed; [`Error::Io`] when the
    /// log cannot be written (a full disk: nothing of the group applied);
    /// [`Error::InvalidParameter`] for more than [`MAX_BATCH`] changes or a prepared item
    /// that does not fit.
    pub fn apply(&self, ops: Vec<Op>) -> Result<Vec<Outcome>> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.submit(
            ops,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        )?;
        rx.recv()
            .map_err(|_| Error::Unavailable("the store's writer stopped".into()))?
    }

    /// [`apply`](Self::apply) without waiting: `reply` is called on the writer's thread with
    /// the outcome once the changes are durable and visible (keep it short: hand the result
    /// to another thread). An error returned here means `reply` will not be called.
    ///
    /// # Errors
    /// As [`apply`](Self::apply) for a refused submission.
    pub fn submit(
        &self,
        ops: Vec<Op>,
        reply: Box<dyn FnOnce(Result<Vec<Outcome>>) + Send>,
    ) -> Result<()> {
        if ops.len() > MAX_BATCH {
            return Err(Error::param(
                "ops",
                format!("{} changes in one call; at most {MAX_BATCH}", ops.len()),
            ));
        }
        for op in &ops {
            if let Op::Insert { item, .. } | Op::InsertIfNew { item, .. } = op {
                check_prepared(&self.inner.config, item)?;
            }
            if let Op::InsertIfNew { within, item, .. } = op {
                self.reach(*within, &item.payload)?;
            }
        }
        let guard = self.threads.lock().expect("not poisoned");
        let Some(t) = guard.as_ref() else {
            return Err(Error::Unavailable(if self.read_only {
                "the store is open read-only".into()
            } else {
                "the store is closed".into()
            }));
        };
        let ops = ops
            .into_iter()
            .map(|op| {
                Ok(match op {
                    Op::InsertIfNew { id, item, within } => {
                        let reach = self.reach(within, &item.payload)?;
                        writer::WOp::Check { id, item, reach }
                    }
                    Op::Insert { id, item } => writer::WOp::Insert { id, item },
                    Op::Remove { id } => writer::WOp::Remove { id },
                })
            })
            .collect::<Result<Vec<_>>>()?;
        match t.jobs.try_send(Job::Ops { ops, reply }) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(Error::Busy(
                "the store's write queue is full: retry later".into(),
            )),
            Err(TrySendError::Disconnected(_)) => {
                Err(Error::Unavailable("the store's writer stopped".into()))
            }
        }
    }

    /// Inserts `item` under `id`, replacing what was stored under it; true if something
    /// was.
    ///
    /// # Errors
    /// As [`prepare`](Self::prepare) and [`apply`](Self::apply).
    pub fn insert(&self, id: u64, item: Item<'_>) -> Result<bool> {
        let item = self.prepare(item)?;
        match self.apply(vec![Op::Insert { id, item }])?.pop() {
            Some(Outcome::Inserted { replaced }) => Ok(replaced),
            other => Err(unexpected(other)),
        }
    }

    /// Inserts `item` under `id` unless a live item matches it `within`, atomically.
    ///
    /// # Errors
    /// As [`prepare`](Self::prepare) and [`apply`](Self::apply).
    pub fn insert_if_new(&self, id: u64, item: Item<'_>, within: Within) -> Result<CheckOutcome> {
        let item = self.prepare(item)?;
        match self
            .apply(vec![Op::InsertIfNew { id, item, within }])?
            .pop()
        {
            Some(Outcome::Checked(c)) => Ok(c),
            other => Err(unexpected(other)),
        }
    }

    /// Removes the item stored under `id`; true if there was one.
    ///
    /// # Errors
    /// As [`apply`](Self::apply).
    pub fn remove(&self, id: u64) -> Result<bool> {
        match self.apply(vec![Op::Remove { id }])?.pop() {
            Some(Outcome::Removed { found }) => Ok(found),
            other => Err(unexpected(other)),
        }
    }

    /// Writes a checkpoint now (the delta as a segment, a new manifest) and drops the log
    /// it makes unnecessary; returns once it is durable.
    ///
    /// # Errors
    /// [`Error::Io`] when a file cannot be written; [`Error::Unavailable`] when read-only
    /// or closed.
    pub fn checkpoint(&self) -> Result<()> {
        let (tx, rx) = mpsc::sync_channel(1);
        {
            let guard = self.threads.lock().expect("not poisoned");
            let t = guard
                .as_ref()
                .ok_or_else(|| Error::Unavailable("the store is closed or read-only".into()))?;
            t.bg.send(Bg::Checkpoint(Box::new(move |r| {
                let _ = tx.send(r);
            })))
            .map_err(|_| Error::Unavailable("the store's background thread stopped".into()))?;
        }
        rx.recv()
            .map_err(|_| Error::Unavailable("the store's background thread stopped".into()))?
    }

    /// Moves a read-only store to the newest checkpoint.
    ///
    /// # Errors
    /// As [`open_read_only`](Self::open_read_only); [`Error::Unavailable`] for a store open
    /// for writing (it is always at the newest state).
    pub fn refresh(&self) -> Result<()> {
        if !self.read_only {
            return Err(Error::Unavailable(
                "refresh is for read-only stores; a writer's store is always current".into(),
            ));
        }
        let (_, state, segs) = load_checkpoint(&self.inner.dir, segment::Check::Shapes, true)?;
        let mut view = View::new(words_for(self.inner.config.bits), self.inner.config.content);
        view.lsn = state.lsn;
        view.live = segs.iter().map(|s| s.live() as u64).sum();
        view.segs = segs;
        self.inner.view.store(Arc::new(view));
        Ok(())
    }

    /// Figures of the store.
    pub fn stats(&self) -> Stats {
        let v = self.inner.view.load();
        let c = &self.inner.counters;
        let (heap_bytes, mapped_bytes) = v.bytes();
        Stats {
            items: v.live,
            bits: self.inner.config.bits,
            content: self.inner.config.content.name(),
            segments: v.segs.len(),
            delta: v.delta_rows(),
            dead: v.segs.iter().map(|s| s.dead.len()).sum(),
            lsn: v.lsn,
            checkpoint_lsn: c.checkpoint_lsn.load(Ordering::Relaxed),
            log_bytes: c.log_bytes.load(Ordering::Relaxed),
            heap_bytes,
            mapped_bytes,
            writes: c.writes.load(Ordering::Relaxed),
            groups: c.groups.load(Ordering::Relaxed),
            merges: c.merges.load(Ordering::Relaxed),
            checkpoints: c.checkpoints.load(Ordering::Relaxed),
            background_error: self
                .inner
                .background_error
                .lock()
                .expect("not poisoned")
                .clone(),
            read_only: self.read_only,
        }
    }

    /// True while the background thread has a merge to do or runs one (false for a store
    /// opened read-only, which merges nothing): a caller that stops writing can wait until
    /// the segments settle.
    pub fn merging(&self) -> bool {
        if self.read_only {
            return false;
        }
        self.inner.counters.merging.load(Ordering::SeqCst)
            || background::plan(&self.inner.view.load(), self.inner.config.delta_limit).is_some()
    }

    /// Waits for the writes queued before it, checkpoints, and stops the store's threads.
    /// Dropping a store does the same, ignoring errors.
    ///
    /// # Errors
    /// The final checkpoint's.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    /// [`close`](Self::close) through a shared reference (for bindings that cannot give the
    /// store up): later writes are refused as [`Error::Unavailable`]; queries go on answering
    /// the last state.
    ///
    /// # Errors
    /// The final checkpoint's.
    pub fn stop(&self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<()> {
        let Some(t) = self.threads.lock().expect("not poisoned").take() else {
            return Ok(());
        };
        let (tx, rx) = mpsc::sync_channel(1);
        let checkpoint = match t.bg.send(Bg::Stop(Box::new(move |r| {
            let _ = tx.send(r);
        }))) {
            Ok(()) => rx
                .recv()
                .unwrap_or_else(|_| Err(Error::Unavailable("background thread stopped".into()))),
            Err(_) => Err(Error::Unavailable("background thread stopped".into())),
        };
        let _ = t.background.join();
        let _ = t.jobs.send(Job::Stop);
        drop(t.jobs);
        let _ = t.writer.join();
        self.lock.lock().expect("not poisoned").take();
        checkpoint
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

fn unexpected(o: Option<Outcome>) -> Error {
    Error::Unavailable(format!("the writer answered {o:?}"))
}

/// Reads the manifest and maps its segments. A read-only opener retries when a checkpoint
/// replaces the files meanwhile.
fn load_checkpoint(
    dir: &Path,
    check: segment::Check,
    read_only: bool,
) -> Result<(Config, manifest::State, Vec<SegRef>)> {
    let mut tries = 0;
    loop {
        let r = (|| {
            let (config, state) = manifest::read(dir)?;
            let segs = state
                .segments
                .iter()
                .map(|(no, dead)| {
                    let seg = Segment::load(dir, *no, config.bits, config.content, check)?;
                    if dead.max().is_some_and(|m| m as usize >= seg.len()) {
                        return Err(Error::Format {
                            path: manifest::path(dir),
                            reason: format!("dead rows beyond segment {no}"),
                        });
                    }
                    Ok(SegRef {
                        seg: Arc::new(seg),
                        dead: Arc::clone(dead),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok((config, state, segs))
        })();
        match r {
            Err(Error::Io { source, .. })
                if read_only && source.kind() == std::io::ErrorKind::NotFound && tries < 20 =>
            {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// A copy of an error for every change of a failed group.
pub(crate) fn copy_error(e: &Error) -> Error {
    match e {
        Error::Io { path, source } => Error::Io {
            path: path.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        Error::Busy(m) => Error::Busy(m.clone()),
        other => Error::Unavailable(other.to_string()),
    }
}
