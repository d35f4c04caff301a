//! Inverse document frequencies keyed by token hash.

use std::io::{BufRead, BufReader};
use std::path::Path;

use rayon::prelude::*;

use super::Tokenizer;
use crate::error::{Error, Result};
use crate::io::atomic::write_atomic;
use crate::io::lines::{io_error, parse_error};
use crate::rng::{hash_bytes, ln};

/// Seed of the token hash that keys document frequencies: [`idf_key`] is XXH3-64 with this
/// seed, fixed, so that an IDF table does not depend on any signer's seed.
pub const IDF_HASH_SEED: u64 = 0;

/// The key of a token in an IDF table: XXH3-64 (seed [`IDF_HASH_SEED`] = 0) of its UTF-8
/// bytes. Distinct tokens collide with probability about `2^-64` per pair.
pub fn idf_key(token: &str) -> u64 {
    hash_bytes(token.as_bytes(), IDF_HASH_SEED)
}

/// Format version of IDF files.
pub const IDF_FILE_VERSION: u32 = 1;
const MAGIC: &str = "simlsh-idf";
const HASH_LINE: &str = "hash xxh3-64 seed 0";

/// Document frequencies of a corpus, keyed by token hash ([`idf_key`]), and the smoothed
/// inverse document frequency of scikit-learn's `TfidfVectorizer` (`smooth_idf=True`):
///
/// `idf(t) = ln((1 + N) / (1 + df(t))) + 1`
///
/// with `N` the number of documents and `df(t)` the number containing `t` (0 for a token never
/// seen, which thus gets the largest weight, `ln(1 + N) + 1`). `ln` is the crate's
/// platform-independent [`rng::ln`](crate::rng::ln), so weights are identical everywhere.
///
/// The table is a sorted `Vec<(key, df)>`: 12 bytes per distinct token, no strings kept.
///
/// **File** ([`save`](Idf::save), [`load`](Idf::load)): UTF-8 text, written atomically:
///
/// ```text
/// simlsh-idf 1
/// hash xxh3-64 seed 0
/// tokenizer mode=words ngram=1 lowercase=1 punctuation=drop stopwords=none hmm=1
/// documents 3
/// entries 2
/// 0a1b2c3d4e5f6071 2
/// f0e1d2c3b4a59687 1
/// ```
///
/// one line per entry: the key as 16 hexadecimal digits and `df`, keys strictly increasing,
/// `1 ≤ df ≤ N`. The `tokenizer` line is [`Tokenizer::config`] of the tokenizer it was fitted
/// with; a tokenizer that uses the table must have the same configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Idf {
    docs: u64,
    table: Vec<(u64, u32)>,
    /// `idf` of each entry, computed once (the crate's `ln` is a series, not a table).
    weights: Vec<f64>,
    /// `idf` of an unseen token (`df = 0`).
    unseen: f64,
    config: String,
}

/// Counts document frequencies, one document (or batch) at a time, in bounded memory for the
/// pending keys; [`finish`](DfCounter::finish) gives the [`Idf`].
#[derive(Clone, Debug)]
pub struct DfCounter {
    tokenizer: Tokenizer,
    docs: u64,
    pending: Vec<u64>,
    table: Vec<(u64, u32)>,
}

/// Pending keys merged into the table when this many accumulate.
const FLUSH: usize = 1 << 22;

impl DfCounter {
    /// A counter for documents tokenised by `tokenizer` (its weighting is irrelevant here).
    pub fn new(tokenizer: &Tokenizer) -> Self {
        DfCounter {
            tokenizer: tokenizer.clone(),
            docs: 0,
            pending: Vec::new(),
            table: Vec::new(),
        }
    }

    /// The distinct keys of a document's tokens, sorted.
    fn keys(&self, text: &str) -> Vec<u64> {
        let mut k: Vec<u64> = self
            .tokenizer
            .tokens(text)
            .iter()
            .map(|t| idf_key(t))
            .collect();
        k.sort_unstable();
        k.dedup();
        k
    }

    /// Counts one document.
    pub fn add(&mut self, text: &str) {
        let k = self.keys(text);
        self.add_keys(&k);
    }

    /// Counts a document given by its distinct token keys.
    fn add_keys(&mut self, keys: &[u64]) {
        self.docs += 1;
        self.pending.extend_from_slice(keys);
        if self.pending.len() >= FLUSH {
            self.flush();
        }
    }

    /// Counts a batch of documents, tokenised in parallel (the counts do not depend on the
    /// number of threads).
    pub fn add_batch<T: AsRef<str> + Sync>(&mut self, docs: &[T]) {
        let keys: Vec<Vec<u64>> = docs.par_iter().map(|d| self.keys(d.as_ref())).collect();
        for k in &keys {
            self.add_keys(k);
        }
    }

    fn flush(&mut self) {
        self.pending.sort_unstable();
        let mut merged = Vec::with_capacity(self.table.len() + self.pending.len() / 2);
        let (mut a, mut b) = (0, 0);
        let p = &self.pending;
        while a < self.table.len() || b < p.len() {
            let key = match (self.table.get(a), p.get(b)) {
                (Some(&(ka, _)), Some(&kb)) => ka.min(kb),
                (Some(&(ka, _)), None) => ka,
                (None, Some(&kb)) => kb,
                (None, None) => unreachable!("loop condition"),
            };
            let mut df = 0u32;
            if self.table.get(a).is_some_and(|e| e.0 == key) {
                df = self.table[a].1;
                a += 1;
            }
            while p.get(b) == Some(&key) {
                df = df.saturating_add(1);
                b += 1;
            }
            merged.push((key, df));
        }
        self.table = merged;
        self.pending.clear();
    }

    /// The fitted table.
    pub fn finish(mut self) -> Idf {
        self.flush();
        Idf::new(self.docs, self.table, self.tokenizer.config())
    }
}

/// `ln((1 + N) / (1 + df)) + 1`.
fn smoothed_idf(docs: u64, df: u32) -> f64 {
    ln((1.0 + docs as f64) / (1.0 + df as f64)) + 1.0
}
impl Idf {
    fn new(docs: u64, table: Vec<(u64, u32)>, config: String) -> Idf {
        let weights = table
            .iter()
            .map(|&(_, df)| smoothed_idf(docs, df))
            .collect();
        Idf {
            docs,
            table,
            weights,
            unseen: smoothed_idf(docs, 0),
            config,
        }
    }

    /// Fits document frequencies on `docs`, tokenised by `tokenizer`, in parallel batches.
    /// The result does not depend on the number of threads.
    pub fn fit<I>(tokenizer: &Tokenizer, docs: I) -> Idf
    where
        I: IntoIterator,
        I::Item: AsRef<str> + Sync,
    {
        let mut c = DfCounter::new(tokenizer);
        let mut batch = Vec::with_capacity(4096);
        for d in docs {
            batch.push(d);
            if batch.len() == 4096 {
                c.add_batch(&batch);
                batch.clear();
            }
        }
        c.add_batch(&batch);
        c.finish()
    }

    /// A table from its parts: `entries` sorted by strictly increasing key, each `df` in
    /// `1..=docs`; `config` is the tokenizer description ([`Tokenizer::config`]).
    pub fn from_parts(docs: u64, entries: Vec<(u64, u32)>, config: String) -> Result<Idf> {
        if let Some(k) = entries.windows(2).position(|w| w[0].0 >= w[1].0) {
            return Err(Error::param(
                "entries",
                format!("keys not strictly increasing at entry {}", k + 1),
            ));
        }
        if let Some(&(key, df)) = entries.iter().find(|e| e.1 == 0 || e.1 as u64 > docs) {
            return Err(Error::param(
                "entries",
                format!("key {key:016x}: df {df} outside 1..={docs}"),
            ));
        }
        if config.contains('\n') {
            return Err(Error::param("config", "must be one line"));
        }
        Ok(Idf::new(docs, entries, config))
    }

    /// Number of documents `N` it was fitted on.
    pub fn docs(&self) -> u64 {
        self.docs
    }

    /// Number of distinct token keys.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when no token was seen.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The `(key, df)` entries, sorted by key.
    pub fn entries(&self) -> &[(u64, u32)] {
        &self.table
    }

    /// The tokenizer description it was fitted with.
    pub fn config(&self) -> &str {
        &self.config
    }

    /// Document frequency of the token with key `key` (0 if unseen).
    pub fn df_key(&self, key: u64) -> u32 {
        self.table
            .binary_search_by_key(&key, |e| e.0)
            .map_or(0, |i| self.table[i].1)
    }

    /// Document frequency of `token` (0 if unseen).
    pub fn df(&self, token: &str) -> u32 {
        self.df_key(idf_key(token))
    }

    /// `ln((1 + N) / (1 + df)) + 1` for the token with key `key`.
    pub fn idf_key(&self, key: u64) -> f64 {
        match self.table.binary_search_by_key(&key, |e| e.0) {
            Ok(i) => self.weights[i],
            Err(_) => self.unseen,
        }
    }

    /// `ln((1 + N) / (1 + df)) + 1` for `token`.
    pub fn idf(&self, token: &str) -> f64 {
        self.idf_key(idf_key(token))
    }

    /// Saves the table in the text format above, atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        write_atomic(path, |w| {
            writeln!(w, "{MAGIC} {IDF_FILE_VERSION}")?;
            writeln!(w, "{HASH_LINE}")?;
            writeln!(w, "tokenizer {}", self.config)?;
            writeln!(w, "documents {}", self.docs)?;
            writeln!(w, "entries {}", self.table.len())?;
            for (k, df) in &self.table {
                writeln!(w, "{k:016x} {df}")?;
            }
            Ok(())
        })
    }

    /// Loads a table saved by [`save`](Idf::save). Every deviation from the format (magic,
    /// version, hash, counts, an entry's syntax, order or range, missing or extra lines) is an
    /// error naming the file and line ([`Error::Parse`], or [`Error::Version`]).
    pub fn load(path: &Path) -> Result<Idf> {
        let file = std::fs::File::open(path).map_err(io_error(path))?;
        let mut lines = BufReader::new(file).lines().enumerate();
        let mut next = |what: &str| -> Result<(usize, String)> {
            match lines.next() {
                Some((i, Ok(l))) => Ok((i + 1, l)),
                Some((i, Err(e))) if e.kind() == std::io::ErrorKind::InvalidData => {
                    Err(parse_error(path, i + 1, "invalid UTF-8"))
                }
                Some((_, Err(e))) => Err(io_error(path)(e)),
                None => Err(Error::Format {
                    path: path.to_path_buf(),
                    reason: format!("unexpected end of file: expected {what}"),
                }),
            }
        };
        let (n, l) = next("the `simlsh-idf` header")?;
        let version = l
            .strip_prefix(MAGIC)
            .and_then(|v| v.strip_prefix(' '))
            .ok_or_else(|| parse_error(path, n, "not an IDF file (no `simlsh-idf` header)"))?;
        let version: u32 = version
            .parse()
            .map_err(|_| parse_error(path, n, format!("bad version `{version}`")))?;
        if version != IDF_FILE_VERSION {
            return Err(Error::Version {
                path: path.to_path_buf(),
                expected: IDF_FILE_VERSION,
                got: version,
            });
        }
        let (n, l) = next("the hash line")?;
        if l != HASH_LINE {
            return Err(parse_error(
                path,
                n,
                format!("unsupported token hash `{l}` (expected `{HASH_LINE}`)"),
            ));
        }
        let mut field = |name: &str| -> Result<(usize, String)> {
            let (n, l) = next(name)?;
            match l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')) {
                Some(v) => Ok((n, v.to_string())),
                None => Err(parse_error(
                    path,
                    n,
                    format!("expected `{name} ...`, found `{l}`"),
                )),
            }
        };
        let (_, config) = field("tokenizer")?;
        let (n, docs) = field("documents")?;
        let docs: u64 = docs
            .parse()
            .map_err(|_| parse_error(path, n, format!("bad document count `{docs}`")))?;
        let (n, count) = field("entries")?;
        let count: usize = count
            .parse()
            .map_err(|_| parse_error(path, n, format!("bad entry count `{count}`")))?;
        let mut table = Vec::with_capacity(count.min(1 << 24));
        let mut last_line = n;
        for (i, l) in lines.by_ref() {
            let n = i + 1;
            let l = l.map_err(|e| {
                if e.kind() == std::io::ErrorKind::InvalidData {
                    parse_error(path, n, "invalid UTF-8")
                } else {
                    io_error(path)(e)
                }
            })?;
            if table.len() == count {
                return Err(parse_error(
                    path,
                    n,
                    format!("more entries than the {count} declared"),
                ));
            }
            let bad = |r: String| parse_error(path, n, r);
            let (k, df) = l
                .split_once(' ')
                .ok_or_else(|| bad(format!("entry `{l}` is not `<key> <df>`")))?;
            if k.len() != 16 {
                return Err(bad(format!("key `{k}` is not 16 hexadecimal digits")));
            }
            let key = u64::from_str_radix(k, 16)
                .map_err(|_| bad(format!("key `{k}` is not 16 hexadecimal digits")))?;
            let df: u32 = df
                .parse()
                .map_err(|_| bad(format!("df `{df}` is not a count")))?;
            if df == 0 || df as u64 > docs {
                return Err(bad(format!("df {df} outside 1..={docs}")));
            }
            if table.last().is_some_and(|&(p, _)| p >= key) {
                return Err(bad(format!(
                    "key {k} does not follow the previous key in increasing order"
                )));
            }
            table.push((key, df));
            last_line = n;
        }
        if table.len() != count {
            return Err(parse_error(
                path,
                last_line + 1,
                format!("unexpected end of file: {} of {count} entries", table.len()),
            ));
        }
        Ok(Idf::new(docs, table, config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flushed_counts_merge_with_later_ones() {
        let mut c = DfCounter::new(&Tokenizer::default());
        c.add("a b");
        c.flush();
        c.add("b c");
        c.flush();
        c.add("c b d b");
        let idf = c.finish();
        assert_eq!(idf.docs(), 3);
        assert_eq!(
            ["a", "b", "c", "d", "e"].map(|t| idf.df(t)),
            [1, 3, 2, 1, 0]
        );
        assert_eq!(
            Idf::from_parts(3, idf.entries().to_vec(), idf.config().into()).unwrap(),
            idf
        );
        assert!(Idf::from_parts(2, idf.entries().to_vec(), String::new()).is_err());
        let mut rev = idf.entries().to_vec();
        rev.reverse();
        assert!(Idf::from_parts(3, rev, String::new()).is_err());
    }
}
