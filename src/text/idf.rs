//! Inverse document frequencies keyed by token hash.

use std::io::BufReader;
use std::path::Path;

use rayon::prelude::*;

use super::Tokenizer;
use super::scan::{self, Scratch};
use crate::cpu::prefetch;
use crate::error::{Error, Result};
use crate::fs::atomic::write_atomic;
use crate::io::lines::{LineReader, io_error, parse_error, utf8};
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
/// The longest line of an IDF file (its lines are short: a header, an entry).
const MAX_IDF_LINE: usize = 64 << 10;

/// Document frequencies of a corpus, keyed by token hash ([`idf_key`]), and the smoothed
/// inverse document frequency of scikit-learn's `TfidfVectorizer` (`smooth_idf=True`):
///
/// `idf(t) = ln((1 + N) / (1 + df(t))) + 1`
///
/// with `N` the number of documents and `df(t)` the number containing `t` (0 for a token never
/// seen, which thus gets the largest weight, `ln(1 + N) + 1`). `ln` is the crate's
/// platform-independent [`rng::ln`](crate::rng::ln), so weights are identical everywhere.
///
/// The table is a sorted `Vec<(key, df)>` (12 to 16 bytes per distinct token, no strings
/// kept) with a bucket directory on the keys' top bits (at most 4 bytes per token), so that a
/// lookup reads two cache lines instead of a binary search's `log2 n`.
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
    /// Where each key's entry is, without a binary search.
    dir: Directory,
    /// `idf` by `df` for `df < by_df.len()` (the crate's `ln` is a series, not a table, and
    /// most entries share a few small `df` values); larger `df` are computed when asked.
    by_df: Vec<f64>,
    config: String,
}

/// A bucket directory over the sorted table: keys are uniform hashes, so with `2^b ≤ n`
/// buckets chosen by the top `b` bits of the key, bucket `k` holds the entries
/// `starts[k]..starts[k + 1]` (about one or two), found with two memory reads instead of a
/// binary search's `log2 n` (the difference between 30 and 4 cache misses on a corpus's
/// two million character bigrams). `4 · 2^b ≤ 4n` bytes.
#[derive(Clone, Debug, PartialEq)]
struct Directory {
    /// `64 − b`: the bucket of `key` is `key >> shift`.
    shift: u32,
    /// `2^b + 1` bucket starts; empty when the table is empty or too long for `u32` indices
    /// (then lookups fall back to a binary search).
    starts: Vec<u32>,
}

impl Directory {
    fn new(table: &[(u64, u32)]) -> Directory {
        let n = table.len();
        if n == 0 || n > u32::MAX as usize {
            return Directory {
                shift: 63,
                starts: Vec::new(),
            };
        }
        let b = n.ilog2().max(1);
        let shift = 64 - b;
        let buckets = 1usize << b;
        let mut starts = Vec::with_capacity(buckets + 1);
        let mut e = 0;
        for k in 0..buckets {
            while e < n && ((table[e].0 >> shift) as usize) < k {
                e += 1;
            }
            starts.push(e as u32);
        }
        starts.push(n as u32);
        Directory { shift, starts }
    }

    /// The index of `key` in `table`, if present.
    #[inline]
    fn find(&self, table: &[(u64, u32)], key: u64) -> Option<usize> {
        if self.starts.is_empty() {
            return table.binary_search_by_key(&key, |e| e.0).ok();
        }
        let k = (key >> self.shift) as usize;
        let (s, e) = (self.starts[k] as usize, self.starts[k + 1] as usize);
        table[s..e].iter().position(|x| x.0 == key).map(|i| s + i)
    }
}

/// Largest `df` whose `idf` is kept in [`Idf::by_df`].
const BY_DF_MAX: u32 = 1 << 16;

/// Counts document frequencies, one document (or batch) at a time, in bounded memory for the
/// pending keys ([`memory`](DfCounter::memory)); [`finish`](DfCounter::finish) gives the
/// [`Idf`].
#[derive(Clone, Debug)]
pub struct DfCounter {
    tokenizer: Tokenizer,
    docs: u64,
    pending: Vec<u64>,
    /// Pending keys merged into the table when one more document's would exceed this many.
    limit: usize,
    table: Vec<(u64, u32)>,
    scratch: Scratch,
    /// The distinct keys of the document [`add`](Self::add) counts.
    doc: Vec<u64>,
}

/// Pending keys merged into the table when this many accumulate, by default.
const FLUSH: usize = 1 << 22;

/// Bytes per pending key: the key, and at most one entry of the merged table (key and count)
/// while the keys are merged.
pub const PENDING_KEY_BYTES: u64 = 24;

impl DfCounter {
    /// A counter for documents tokenised by `tokenizer` (its weighting is irrelevant here).
    pub fn new(tokenizer: &Tokenizer) -> Self {
        DfCounter {
            tokenizer: tokenizer.clone(),
            docs: 0,
            pending: Vec::new(),
            limit: FLUSH,
            table: Vec::new(),
            scratch: Scratch::default(),
            doc: Vec::new(),
        }
    }

    /// Holds the pending keys (and, while they are merged, their entries in the merged
    /// table: [`PENDING_KEY_BYTES`] each) within `bytes`, merging them into the table more
    /// often (the counts do not depend on it). By default, 2^22 keys (96 MiB). A document
    /// with more distinct keys than that is merged alone. The table itself is the fitted
    /// [`Idf`]'s ([`Idf::bytes`]), twice while a merge copies it.
    ///
    /// ```
    /// use simlsh::text::{DfCounter, Idf, Tokenizer};
    ///
    /// let tok = Tokenizer::builder().build()?;
    /// let docs = ["a b", "b c", "c d", "a d"];
    /// let mut c = DfCounter::new(&tok).memory(48); // two keys at a time
    /// c.add_batch(&docs);
    /// assert_eq!(c.finish().entries(), Idf::fit(&tok, docs.iter()).entries());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    pub fn memory(mut self, bytes: u64) -> Self {
        self.limit = usize::try_from(bytes / PENDING_KEY_BYTES)
            .unwrap_or(usize::MAX)
            .max(1);
        self
    }

    /// Makes room for `more` pending keys: merges the pending ones first when they would
    /// exceed the limit.
    fn room(&mut self, more: usize) {
        if !self.pending.is_empty() && self.pending.len() + more > self.limit {
            self.flush();
        }
        // Grown by doubling, never beyond the limit (unless one document exceeds it).
        let want = self.pending.len() + more;
        if want > self.pending.capacity() {
            let cap = (2 * self.pending.capacity()).clamp(want, self.limit.max(want));
            self.pending.reserve_exact(cap - self.pending.len());
        }
    }

    /// Appends the distinct keys of a document's tokens to `out`.
    fn keys(tokenizer: &Tokenizer, text: &str, s: &mut Scratch, out: &mut Vec<u64>) {
        let source = scan::features(&tokenizer.b, text, s);
        scan::count(text, source, s);
        let start = out.len();
        out.extend_from_slice(&s.distinct.keys);
        if s.distinct.collided {
            // Two different tokens with one key: the key counts once.
            out[start..].sort_unstable();
            let mut w = start;
            for r in start..out.len() {
                if r == start || out[r] != out[w - 1] {
                    out[w] = out[r];
                    w += 1;
                }
            }
            out.truncate(w);
        }
    }

    /// Counts one document by its distinct keys.
    pub(crate) fn add_keys(&mut self, keys: &[u64]) {
        self.room(keys.len());
        self.pending.extend_from_slice(keys);
        self.docs += 1;
    }

    /// Counts one document.
    pub fn add(&mut self, text: &str) {
        let mut keys = std::mem::take(&mut self.doc);
        keys.clear();
        Self::keys(&self.tokenizer, text, &mut self.scratch, &mut keys);
        self.add_keys(&keys);
        self.doc = keys;
    }

    /// Counts a batch of documents, tokenised in parallel (the counts do not depend on the
    /// number of threads).
    pub fn add_batch<T: AsRef<str> + Sync>(&mut self, docs: &[T]) {
        let t = &self.tokenizer;
        // Each document's keys, as (keys, where each document's end).
        let keys: Vec<(Vec<u64>, Vec<usize>)> = docs
            .par_chunks(64)
            .map_init(Scratch::default, |s, chunk| {
                let mut out = Vec::new();
                let mut ends = Vec::with_capacity(chunk.len());
                for d in chunk {
                    Self::keys(t, d.as_ref(), s, &mut out);
                    ends.push(out.len());
                }
                (out, ends)
            })
            .collect();
        self.docs += docs.len() as u64;
        for (k, ends) in &keys {
            let mut start = 0;
            for &end in ends {
                self.room(end - start);
                self.pending.extend_from_slice(&k[start..end]);
                start = end;
            }
        }
    }

    fn flush(&mut self) {
        self.pending.sort_unstable();
        // At most one entry per key: the table's and the pending ones'.
        let mut merged = Vec::with_capacity(self.table.len() + self.pending.len());
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
    fn new(docs: u64, mut table: Vec<(u64, u32)>, config: String) -> Idf {
        // The merges of fitting reserve more than the distinct keys.
        table.shrink_to_fit();
        let max_df = table.iter().map(|e| e.1).max().unwrap_or(0).min(BY_DF_MAX);
        let by_df = (0..=max_df).map(|df| smoothed_idf(docs, df)).collect();
        Idf {
            docs,
            dir: Directory::new(&table),
            table,
            by_df,
            config,
        }
    }

    /// `ln((1 + N) / (1 + df)) + 1`, from the cache when it holds `df`.
    #[inline]
    fn idf_of_df(&self, df: u32) -> f64 {
        match self.by_df.get(df as usize) {
            Some(&w) => w,
            None => smoothed_idf(self.docs, df),
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

    /// The table of a corpus from the tables of its parts, fitted with the same tokenizer
    /// configuration: documents and frequencies added, so that fitting the parts apart and
    /// merging equals fitting the whole (the distributed fit of a corpus split over machines).
    ///
    /// ```
    /// use simlsh::text::{Idf, Tokenizer};
    /// let tok = Tokenizer::builder().build()?;
    /// let docs = ["a b", "b c", "c d", "a d"];
    /// let whole = Idf::fit(&tok, docs.iter());
    /// let parts = [Idf::fit(&tok, docs[..1].iter()), Idf::fit(&tok, docs[1..].iter())];
    /// assert_eq!(Idf::merge(&parts)?.entries(), whole.entries());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no tables, or tables of different configurations.
    pub fn merge(tables: &[Idf]) -> Result<Idf> {
        let first = tables
            .first()
            .ok_or_else(|| Error::param("tables", "no IDF table to merge"))?;
        if let Some(t) = tables.iter().find(|t| t.config != first.config) {
            return Err(Error::param(
                "tables",
                format!(
                    "tables fitted with different tokenizers: `{}` and `{}`",
                    first.config, t.config
                ),
            ));
        }
        let docs = tables.iter().map(|t| t.docs).sum();
        let mut all: Vec<(u64, u32)> = tables
            .iter()
            .flat_map(|t| t.table.iter().copied())
            .collect();
        all.sort_unstable_by_key(|e| e.0);
        let mut merged: Vec<(u64, u32)> = Vec::with_capacity(all.len());
        for (k, df) in all {
            match merged.last_mut() {
                Some(last) if last.0 == k => last.1 = last.1.saturating_add(df),
                _ => merged.push((k, df)),
            }
        }
        Ok(Idf::new(docs, merged, first.config.clone()))
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

    /// Bytes held: the entries, their directory and the cached weights.
    pub fn bytes(&self) -> u64 {
        (self.table.capacity() * std::mem::size_of::<(u64, u32)>()
            + self.dir.starts.capacity() * 4
            + self.by_df.capacity() * 8
            + self.config.capacity()) as u64
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
        self.dir
            .find(&self.table, key)
            .map_or(0, |i| self.table[i].1)
    }

    /// Document frequency of `token` (0 if unseen).
    pub fn df(&self, token: &str) -> u32 {
        self.df_key(idf_key(token))
    }

    /// `ln((1 + N) / (1 + df)) + 1` for the token with key `key`.
    pub fn idf_key(&self, key: u64) -> f64 {
        self.idf_of_df(self.df_key(key))
    }

    /// [`idf_key`](Idf::idf_key) of every key of `keys`, into `out` (cleared first). The
    /// lookups are interleaved (all directory reads are requested, then all table reads), so
    /// that the cache misses of a large table overlap instead of following one another.
    pub fn idf_keys(&self, keys: &[u64], out: &mut Vec<f64>) {
        out.clear();
        let d = &self.dir;
        if d.starts.is_empty() {
            out.extend(keys.iter().map(|&k| self.idf_key(k)));
            return;
        }
        const BATCH: usize = 32;
        let mut at = [0usize; BATCH];
        for chunk in keys.chunks(BATCH) {
            for &k in chunk {
                prefetch(&d.starts[(k >> d.shift) as usize]);
            }
            for (&k, a) in chunk.iter().zip(&mut at) {
                *a = d.starts[(k >> d.shift) as usize] as usize;
                if let Some(e) = self.table.get(*a) {
                    prefetch(e);
                }
            }
            for (&k, &a) in chunk.iter().zip(&at) {
                let end = d.starts[(k >> d.shift) as usize + 1] as usize;
                let df = self.table[a..end]
                    .iter()
                    .find(|e| e.0 == k)
                    .map_or(0, |e| e.1);
                out.push(self.idf_of_df(df));
            }
        }
    }

    /// `ln((1 + N) / (1 + df)) + 1` for `token`.
    pub fn idf(&self, token: &str) -> f64 {
        self.idf_key(idf_key(token))
    }

    /// Saves the table in the text format above, atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        write_atomic(path, |w| self.write_to(w))
    }

    /// Writes the table in the text format above to `w` (to stage it in an
    /// [`OutputSet`](crate::fs::OutputSet) with other outputs).
    pub fn write_to(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(w, "{MAGIC} {IDF_FILE_VERSION}")?;
        writeln!(w, "{HASH_LINE}")?;
        writeln!(w, "tokenizer {}", self.config)?;
        writeln!(w, "documents {}", self.docs)?;
        writeln!(w, "entries {}", self.table.len())?;
        for (k, df) in &self.table {
            writeln!(w, "{k:016x} {df}")?;
        }
        Ok(())
    }

    /// Loads a table saved by [`save`](Idf::save). Every deviation from the format (magic,
    /// version, hash, counts, an entry's syntax, order or range, missing or extra lines, a
    /// line longer than 64 KiB) is an error naming the file and line ([`Error::Parse`], or
    /// [`Error::Version`]); errors never quote the file's content.
    pub fn load(path: &Path) -> Result<Idf> {
        let file = std::fs::File::open(path).map_err(io_error(path))?;
        let mut lines = LineReader::with_max(BufReader::new(file), MAX_IDF_LINE);
        let mut next = |what: &str| -> Result<(usize, String)> {
            match lines.next_line() {
                Ok(Some((n, b))) => Ok((n, utf8(path, n, b)?.to_string())),
                Ok(None) => Err(Error::Format {
                    path: path.to_path_buf(),
                    reason: format!("unexpected end of file: expected {what}"),
                }),
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    Err(parse_error(path, lines.line(), e.to_string()))
                }
                Err(e) => Err(io_error(path)(e)),
            }
        };
        let (n, l) = next("the `simlsh-idf` header")?;
        let version = l
            .strip_prefix(MAGIC)
            .and_then(|v| v.strip_prefix(' '))
            .ok_or_else(|| parse_error(path, n, "not an IDF file (no `simlsh-idf` header)"))?;
        let version: u32 = version
            .parse()
            .map_err(|_| parse_error(path, n, "the version is not a number"))?;
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
                format!("unsupported token hash (expected `{HASH_LINE}`)"),
            ));
        }
        let mut field = |name: &str| -> Result<(usize, String)> {
            let (n, l) = next(name)?;
            match l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')) {
                Some(v) => Ok((n, v.to_string())),
                None => Err(parse_error(path, n, format!("expected `{name} ...`"))),
            }
        };
        let (_, config) = field("tokenizer")?;
        let (n, docs) = field("documents")?;
        let docs: u64 = docs
            .parse()
            .map_err(|_| parse_error(path, n, "the document count is not a number"))?;
        let (n, count) = field("entries")?;
        let count: usize = count
            .parse()
            .map_err(|_| parse_error(path, n, "the entry count is not a number"))?;
        let mut table = Vec::with_capacity(count.min(1 << 24));
        let mut last_line = n;
        loop {
            let (n, b) = match lines.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Err(parse_error(path, lines.line(), e.to_string()));
                }
                Err(e) => return Err(io_error(path)(e)),
            };
            let l = utf8(path, n, b)?;
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
                .ok_or_else(|| bad("the entry is not `<key> <df>`".into()))?;
            if k.len() != 16 {
                return Err(bad("the key is not 16 hexadecimal digits".into()));
            }
            let key = u64::from_str_radix(k, 16)
                .map_err(|_| bad("the key is not 16 hexadecimal digits".into()))?;
            let df: u32 = df
                .parse()
                .map_err(|_| bad("the df is not a count".into()))?;
            if df == 0 || df as u64 > docs {
                return Err(bad(format!("df {df} outside 1..={docs}")));
            }
            if table.last().is_some_and(|&(p, _)| p >= key) {
                return Err(bad(format!(
                    "key {key:016x} does not follow the previous key in increasing order"
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
