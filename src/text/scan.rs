//! The single pass over one document: normalise, segment, shingle, count the distinct
//! features, weight them and keep the top K, in buffers reused from one document to the next
//! (one [`Scratch`] per thread): no string is allocated per token and no vector per document.
//!
//! Features are byte spans of one text (the normalised document, or for word shingles a
//! buffer of the joined shingles), keyed by [`idf_key`] (XXH3-64, seed 0). Distinct features
//! are counted in a hash table keyed by that hash, with the bytes compared on a match, so two
//! different features are never merged; they are listed in order of first occurrence, which
//! is the order in which they are accumulated into a signature.

use super::segment::{self, Span};
use super::{Mode, TokenizerBuilder, Weighting};
use crate::cpu::prefetch;
use crate::rng::hash_bytes;
use crate::text::IDF_HASH_SEED;

/// Slot value of an empty hash-table slot.
const EMPTY: u32 = u32::MAX;

/// Which buffer holds a document's features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// The document itself (no lower-casing, word modes).
    Input,
    /// The lower-cased document (word modes).
    Lower,
    /// The lower-cased, whitespace-collapsed document (characters).
    Collapsed,
    /// The word shingles, joined by one space, one after the other.
    Arena,
}

/// The normalised text and joined shingles of the current document.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bufs {
    lower: String,
    collapsed: String,
    arena: String,
}

impl Bufs {
    /// The text that `source` names.
    #[inline]
    pub fn get<'a>(&'a self, input: &'a str, source: Source) -> &'a str {
        match source {
            Source::Input => input,
            Source::Lower => &self.lower,
            Source::Collapsed => &self.collapsed,
            Source::Arena => &self.arena,
        }
    }
}

/// A hash-table slot: a feature's key and its index among the distinct features, or
/// `idx == EMPTY`.
#[derive(Clone, Copy, Debug)]
struct Slot {
    key: u64,
    idx: u32,
}

const FREE: Slot = Slot { key: 0, idx: EMPTY };

/// Occurrences hashed ahead of their insertion, so that their slots are fetched in parallel.
const AHEAD: usize = 16;

/// The distinct features of the current document, in order of first occurrence.
#[derive(Clone, Debug, Default)]
pub(crate) struct Distinct {
    /// Open addressing, linear probing, at most half full; keys stored in the slots, so that
    /// a probe reads one cache line. Empty between documents (only the slots used are reset).
    slots: Vec<Slot>,
    /// The slot of each distinct feature, to reset it.
    slot_of: Vec<u32>,
    /// [`idf_key`](super::idf_key) of each distinct feature.
    pub keys: Vec<u64>,
    /// Its first occurrence.
    pub first: Vec<Span>,
    /// Its number of occurrences.
    pub counts: Vec<u32>,
    /// True when two distinct features of this document have the same key.
    pub collided: bool,
}

impl Distinct {
    /// Empties the set and makes room for `n` insertions (it grows as needed beyond).
    fn reset(&mut self, n: usize) {
        for &s in &self.slot_of {
            self.slots[s as usize] = FREE;
        }
        self.slot_of.clear();
        self.keys.clear();
        self.first.clear();
        self.counts.clear();
        self.collided = false;
        let want = (2 * n).next_power_of_two().max(16);
        // Grow to a load of at most 1/2; give back a large table a small document left over.
        if self.slots.len() < want || self.slots.len() > (want << 4).max(1 << 16) {
            self.slots = vec![FREE; want];
        }
    }

    /// Counts the occurrences `spans` of features of `text`. The keys of the next
    /// [`AHEAD`] occurrences are computed and their slots prefetched before they are
    /// inserted: on a long document, whose table does not fit in the cache, the misses
    /// overlap.
    fn insert_all(&mut self, text: &str, spans: &[Span]) {
        self.ahead(text, spans, |d, span, key| d.insert(text, span, key));
    }

    /// Counts the occurrences `spans` of features of `text` as [`insert_kept`](Self::insert_kept)
    /// does, keeping the new ones in `store`, with the slots prefetched as
    /// [`insert_all`](Self::insert_all) does.
    fn insert_all_kept(&mut self, store: &mut String, text: &str, spans: &[Span]) {
        self.ahead(text, spans, |d, span, key| {
            d.insert_kept(store, span.get(text), key)
        });
    }

    /// Calls `insert` on each of `spans` with its key, the keys of the next [`AHEAD`]
    /// computed and their slots prefetched first, room made for them.
    #[inline]
    fn ahead(&mut self, text: &str, spans: &[Span], mut insert: impl FnMut(&mut Self, Span, u64)) {
        let mut keys = [0u64; AHEAD];
        for chunk in spans.chunks(AHEAD) {
            self.room(chunk.len());
            let mask = self.slots.len() - 1;
            for (k, s) in keys.iter_mut().zip(chunk) {
                *k = hash_bytes(s.get(text).as_bytes(), IDF_HASH_SEED);
                prefetch(&self.slots[*k as usize & mask]);
            }
            for (&k, &s) in keys.iter().zip(chunk) {
                insert(self, s, k);
            }
        }
    }

    /// Makes room for `more` new features at a load of at most 1/2: the table doubles (its
    /// features re-inserted by key, in order) when a document has more distinct features
    /// than it was sized for.
    fn room(&mut self, more: usize) {
        let want = 2 * (self.keys.len() + more);
        if want <= self.slots.len() {
            return;
        }
        let size = want.next_power_of_two();
        let mask = size - 1;
        self.slots = vec![FREE; size];
        self.slot_of.clear();
        for (idx, &key) in self.keys.iter().enumerate() {
            let mut i = key as usize & mask;
            while self.slots[i].idx != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = Slot {
                key,
                idx: idx as u32,
            };
            self.slot_of.push(i as u32);
        }
    }

    /// Counts one occurrence of the feature `bytes`, whose key is `key`, kept in `store`: a
    /// new feature is appended to it (its first span is there), a known one is compared with
    /// its bytes there (room made by the caller). How word shingles are counted without
    /// keeping every occurrence.
    fn insert_kept(&mut self, store: &mut String, bytes: &str, key: u64) {
        if let Err(slot) = self.find(key, |f| f.get(store) == bytes) {
            let span = Span {
                start: store.len(),
                end: store.len() + bytes.len(),
            };
            store.push_str(bytes);
            self.add(slot, key, span);
        }
    }

    /// Counts one occurrence of the feature `span` of `text`, whose key is `key` (room made
    /// by the caller).
    #[inline]
    fn insert(&mut self, text: &str, span: Span, key: u64) {
        if let Err(slot) = self.find(key, |f| f.get(text) == span.get(text)) {
            self.add(slot, key, span);
        }
    }

    /// Counts one more occurrence of the feature of key `key` whose first occurrence is
    /// `same`; `Err` with the empty slot where it goes when it is new. A feature of the same
    /// key that is not `same` is a collision, noted.
    #[inline]
    fn find(&mut self, key: u64, same: impl Fn(Span) -> bool) -> Result<(), usize> {
        let mask = self.slots.len() - 1;
        let mut i = key as usize & mask;
        loop {
            let s = self.slots[i];
            if s.idx == EMPTY {
                return Err(i);
            }
            if s.key == key {
                let d = s.idx as usize;
                if same(self.first[d]) {
                    self.counts[d] += 1;
                    return Ok(());
                }
                self.collided = true;
            }
            i = (i + 1) & mask;
        }
    }

    /// A new feature, of key `key` and first occurrence `span`, in the empty slot `slot`.
    #[inline]
    fn add(&mut self, slot: usize, key: u64, span: Span) {
        self.slots[slot] = Slot {
            key,
            idx: self.keys.len() as u32,
        };
        self.slot_of.push(slot as u32);
        self.keys.push(key);
        self.first.push(span);
        self.counts.push(1);
    }

    /// Number of distinct features.
    pub fn len(&self) -> usize {
        self.keys.len()
    }
}

/// Reused buffers of the single pass; one per thread.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scratch {
    pub bufs: Bufs,
    units: Vec<Span>,
    alnum: Vec<bool>,
    /// Feature occurrences in document order.
    pub feats: Vec<Span>,
    pub distinct: Distinct,
    /// Weight of each distinct feature; after [`weigh`], of each kept one.
    pub weights: Vec<f32>,
    /// The distinct features kept (indices into `distinct`), in order of first occurrence.
    pub kept: Vec<u32>,
    idf: Vec<f64>,
    /// jieba's keyword weights of the document, sorted by word.
    #[cfg(feature = "cjk")]
    keywords: Vec<(String, f64)>,
    /// Token slices handed to the signer; always empty between documents (see [`with_refs`]).
    refs: Vec<&'static str>,
}

/// Normalises `input` into `bufs` as the tokenizer asks (lower-cased; for characters, its
/// whitespace collapsed) and returns the buffer that holds the normalised text.
fn normalise(b: &TokenizerBuilder, input: &str, bufs: &mut Bufs) -> Source {
    let mut source = if b.lowercase {
        segment::lowercase_into(input, &mut bufs.lower);
        Source::Lower
    } else {
        Source::Input
    };
    if b.mode == Mode::Chars {
        let text = match source {
            Source::Lower => &bufs.lower,
            _ => input,
        };
        segment::collapse_whitespace_into(text, &mut bufs.collapsed);
        source = Source::Collapsed;
    }
    source
}

/// Appends the units of `part` to `units`, as spans offset by `base` (where `part` starts in
/// the normalised text): the words the punctuation and stop-word rules keep, or the
/// characters (grapheme clusters), with whether each holds a letter or digit in `alnum`.
fn units_of(
    b: &TokenizerBuilder,
    part: &str,
    base: usize,
    units: &mut Vec<Span>,
    alnum: &mut Vec<bool>,
) {
    let from = units.len();
    match b.mode {
        Mode::Words => segment::uax29(part, 0, b.keep_punctuation, units),
        #[cfg(feature = "cjk")]
        Mode::Cjk => segment::cjk(part, 0, b.hmm, units),
        #[cfg(feature = "cjk")]
        Mode::Auto => segment::auto(part, b.hmm, b.keep_punctuation, units),
        #[cfg(not(feature = "cjk"))]
        Mode::Cjk | Mode::Auto => unreachable!("refused by TokenizerBuilder::build"),
        Mode::Chars => segment::graphemes(part, units, alnum),
    }
    if b.mode != Mode::Chars {
        let mut k = from;
        for j in from..units.len() {
            let w = units[j].get(part);
            if (b.keep_punctuation || segment::has_alnum(w)) && !b.stop_words.contains(w) {
                units[k] = units[j];
                k += 1;
            }
        }
        units.truncate(k);
    }
    for u in &mut units[from..] {
        u.start += base;
        u.end += base;
    }
}

/// Fills `s.feats` with the features of `input` in document order (repeats included) and
/// returns the buffer they are spans of.
pub(crate) fn features(b: &TokenizerBuilder, input: &str, s: &mut Scratch) -> Source {
    let Scratch {
        bufs,
        units,
        alnum,
        feats,
        ..
    } = s;
    units.clear();
    alnum.clear();
    feats.clear();
    let source = normalise(b, input, bufs);
    let chars = b.mode == Mode::Chars;
    let text = bufs.get(input, source);
    units_of(b, text, 0, units, alnum);
    let n = b.ngram;
    let drop_punct = chars && !b.keep_punctuation;
    if chars {
        // Character shingles are slices of the collapsed text.
        let mut push = |from: usize, to: usize| {
            if !drop_punct || alnum[from..=to].iter().any(|&a| a) {
                feats.push(Span {
                    start: units[from].start,
                    end: units[to].end,
                });
            }
        };
        let len = units.len();
        if len >= n {
            (0..=len - n).for_each(|i| push(i, i + n - 1));
        } else if len > 0 {
            push(0, len - 1);
        }
        return source;
    }
    if n == 1 {
        feats.extend_from_slice(units);
        return source;
    }
    // Word shingles: the units joined by one space, written one after the other.
    let arena = &mut bufs.arena;
    arena.clear();
    let text = match source {
        Source::Input => input,
        _ => &bufs.lower,
    };
    let mut join = |ws: &[Span]| feats.push(join_into(arena, text, ws));
    if units.len() < n {
        if !units.is_empty() {
            join(units);
        }
    } else {
        units.windows(n).for_each(join);
    }
    Source::Arena
}

/// Bytes of a document segmented at a time by [`counted`]: the per-occurrence buffers (units,
/// features) hold one such chunk, not the document.
const CHUNK: usize = 1 << 12;

/// The end of the chunk of `text` that starts at `start`: the first position at or after
/// `start + CHUNK` where cutting changes no unit, or the end of the text. Between two
/// characters that are grapheme clusters on their own ([`segment::is_simple`]) for
/// characters; after an ASCII space followed by a visible ASCII character for words (UAX #29
/// and jieba restart there: a space ends every run their rules look back over). A text with no
/// such place (a long run of Han text in word modes) is one chunk.
fn chunk_end(text: &str, start: usize, chars: bool) -> usize {
    let b = text.as_bytes();
    let mut i = start + CHUNK;
    while i < b.len() {
        if chars {
            if text.is_char_boundary(i) {
                let before = text[..i].chars().next_back();
                let after = text[i..].chars().next();
                if before.is_some_and(segment::is_simple) && after.is_some_and(segment::is_simple) {
                    return i;
                }
            }
        } else if b[i - 1] == b' ' && b[i].is_ascii_graphic() {
            return i;
        }
        i += 1;
    }
    b.len()
}

/// [`features`] and [`count`] in one streaming pass: the distinct features of `input` and
/// their counts, into `s.distinct`, with the same keys, first occurrences (in the same order)
/// and counts, but with only one chunk's units and features held at a time (see
/// [`CHUNK`]). Word shingles are built one at a time and only the distinct ones are kept (in
/// the arena). Returns the buffer the features are spans of.
pub(crate) fn counted(b: &TokenizerBuilder, input: &str, s: &mut Scratch) -> Source {
    if input.len() <= CHUNK {
        // One chunk: the whole-document pass, which is faster on short documents.
        let source = features(b, input, s);
        count(input, source, s);
        return source;
    }
    streamed(b, input, s)
}

/// The streaming pass of [`counted`], chunk by chunk.
fn streamed(b: &TokenizerBuilder, input: &str, s: &mut Scratch) -> Source {
    let Scratch {
        bufs,
        units,
        alnum,
        feats,
        distinct,
        ..
    } = s;
    units.clear();
    alnum.clear();
    feats.clear();
    let source = normalise(b, input, bufs);
    let chars = b.mode == Mode::Chars;
    let n = b.ngram;
    let shingles = !chars && n > 1;
    let text: &str = match source {
        Source::Input => input,
        Source::Lower => &bufs.lower,
        Source::Collapsed => &bufs.collapsed,
        Source::Arena => unreachable!("not a normalised text"),
    };
    distinct.reset(text.len().min(CHUNK));
    let arena = &mut bufs.arena;
    arena.clear();
    let mut joined = String::new();
    // Units seen so far (the last `n - 1` are carried into the next chunk), and whether any
    // n-gram was emitted (a shorter text is one feature of all its units).
    let (mut seen, mut emitted) = (0usize, false);
    let mut pos = 0;
    while pos < text.len() {
        let end = chunk_end(text, pos, chars);
        let part = &text[pos..end];
        let from = units.len();
        units_of(b, part, pos, units, alnum);
        seen += units.len() - from;
        // The n-grams ending in this chunk: those of units `from - (n - 1)..`, the carried
        // units first.
        if chars {
            let drop_punct = !b.keep_punctuation;
            for to in (n - 1).max(from)..units.len() {
                let first = to + 1 - n;
                if !drop_punct || alnum[first..=to].iter().any(|&a| a) {
                    feats.push(Span {
                        start: units[first].start,
                        end: units[to].end,
                    });
                }
                emitted = true;
            }
            distinct.insert_all(text, feats);
            feats.clear();
        } else if shingles {
            // This chunk's shingles, joined in `shingles`, then counted.
            joined.clear();
            for to in (n - 1).max(from)..units.len() {
                feats.push(join_into(&mut joined, text, &units[to + 1 - n..=to]));
                emitted = true;
            }
            distinct.insert_all_kept(arena, &joined, feats);
            feats.clear();
        } else {
            distinct.insert_all(text, &units[from..]);
        }
        // Carry the last n - 1 units into the next chunk.
        let keep = units.len().min(n - 1);
        units.drain(..units.len() - keep);
        if chars {
            alnum.drain(..alnum.len() - keep);
        }
        pos = end;
    }
    // A text of fewer than n units (and at least one) is one feature of all of them.
    if n > 1 && !emitted && seen > 0 {
        if chars {
            if !b.keep_punctuation && !alnum.iter().any(|&a| a) {
                return source;
            }
            let span = Span {
                start: units[0].start,
                end: units[units.len() - 1].end,
            };
            distinct.insert_all(text, &[span]);
        } else {
            joined.clear();
            let span = join_into(&mut joined, text, units);
            distinct.insert_all_kept(arena, &joined, &[span]);
        }
    }
    if shingles { Source::Arena } else { source }
}

/// Appends the words `ws` of `text`, joined by one space, to `out`; returns their span there.
fn join_into(out: &mut String, text: &str, ws: &[Span]) -> Span {
    let start = out.len();
    for (k, w) in ws.iter().enumerate() {
        if k > 0 {
            out.push(' ');
        }
        out.push_str(w.get(text));
    }
    Span {
        start,
        end: out.len(),
    }
}

/// Counts the distinct features of `s.feats` (spans of `source`) into `s.distinct`.
pub(crate) fn count(input: &str, source: Source, s: &mut Scratch) {
    s.distinct.reset(s.feats.len());
    let text = s.bufs.get(input, source);
    s.distinct.insert_all(text, &s.feats);
}

/// Weighs the distinct features (spans of `source`) and keeps the top K: fills `s.kept` (in
/// order of first occurrence) and `s.weights` (one per kept feature).
pub(crate) fn weigh(b: &TokenizerBuilder, input: &str, source: Source, s: &mut Scratch) {
    let d = &s.distinct;
    let w = &mut s.weights;
    w.clear();
    match &b.weighting {
        Weighting::Binary | Weighting::Tf | Weighting::TfIdf(_) => {
            weigh_counts(&b.weighting, &d.keys, &d.counts, &mut s.idf, w);
        }
        #[cfg(feature = "cjk")]
        Weighting::JiebaKeywords => {
            // Mode::Cjk, ngram 1 (checked by the builder): the features are the words jieba
            // cut from this text; those that are not keywords get NaN and are dropped below.
            let text = s.bufs.get(input, source);
            super::keywords::weights(text, b.hmm, &mut s.keywords);
            let kw = &s.keywords;
            w.extend(d.first.iter().map(|f| {
                let word = f.get(text);
                kw.binary_search_by(|k| k.0.as_str().cmp(word))
                    .map_or(f32::NAN, |i| kw[i].1 as f32)
            }));
        }
        #[cfg(not(feature = "cjk"))]
        Weighting::JiebaKeywords => {
            let _ = (input, source);
            unreachable!("refused by TokenizerBuilder::build")
        }
    }
    keep(b.top_k, w, &mut s.kept);
}

/// Appends to `w` the weights of features of keys `keys` occurring `counts` times in a
/// document, by a weighting of counts (binary, TF, TF-IDF; `idf` a reused buffer). Returns
/// false, appending nothing, for a weighting that needs the text (jieba's keywords).
pub(crate) fn weigh_counts(
    weighting: &Weighting,
    keys: &[u64],
    counts: &[u32],
    idf: &mut Vec<f64>,
    w: &mut Vec<f32>,
) -> bool {
    match weighting {
        Weighting::Binary => w.extend(counts.iter().map(|_| 1.0)),
        Weighting::Tf => w.extend(counts.iter().map(|&c| c as f32)),
        Weighting::TfIdf(table) => {
            table.idf_keys(keys, idf);
            w.extend(
                counts
                    .iter()
                    .zip(idf.iter())
                    .map(|(&c, &i)| (c as f64 * i) as f32),
            );
        }
        Weighting::JiebaKeywords => return false,
    }
    true
}

/// Keeps the weighted features of a document (`w`, one weight per distinct feature in order
/// of first occurrence): those whose weight is not NaN, and of them the `top_k` heaviest (ties
/// by first occurrence). Fills `kept` (increasing indices) and compacts `w` to their weights.
pub(crate) fn keep(top_k: Option<usize>, w: &mut Vec<f32>, kept: &mut Vec<u32>) {
    let n = w.len();
    kept.clear();
    kept.extend((0..n as u32).filter(|&j| !w[j as usize].is_nan()));
    let k = top_k.unwrap_or(usize::MAX);
    if k < kept.len() || kept.len() < n {
        if k < kept.len() {
            // Heaviest first, ties by first occurrence: a strict total order, so the K
            // selected are unique; then back to document order.
            let by_weight =
                |a: &u32, b: &u32| w[*b as usize].total_cmp(&w[*a as usize]).then(a.cmp(b));
            kept.select_nth_unstable_by(k - 1, by_weight);
            kept.truncate(k);
            kept.sort_unstable();
        }
        // `kept` is increasing, so `kept[j] ≥ j`: compacting in place reads before it
        // overwrites.
        for j in 0..kept.len() {
            w[j] = w[kept[j] as usize];
        }
        w.truncate(kept.len());
    }
}

/// The whole pass: features, distinct counts, weights and top K of `input`. Returns the
/// buffer the features are spans of.
pub(crate) fn scan(b: &TokenizerBuilder, input: &str, s: &mut Scratch) -> Source {
    let source = counted(b, input, s);
    weigh(b, input, source, s);
    source
}

/// Calls `f` with the kept features of the last [`scan`] as string slices (in order of first
/// occurrence) and their weights, without allocating: the slice vector is reused.
pub(crate) fn with_refs<R>(
    input: &str,
    source: Source,
    s: &mut Scratch,
    f: impl FnOnce(&[&str], &[f32]) -> R,
) -> R {
    let mut refs = recycle(std::mem::take(&mut s.refs));
    let text = s.bufs.get(input, source);
    refs.extend(
        s.kept
            .iter()
            .map(|&j| s.distinct.first[j as usize].get(text)),
    );
    let out = f(&refs, &s.weights);
    s.refs = recycle(refs);
    out
}

/// An emptied vector of string slices with a new lifetime, keeping its allocation (the
/// element types have the same layout, so collecting the empty iterator reuses the buffer).
fn recycle<'a, 'b>(mut v: Vec<&'a str>) -> Vec<&'b str> {
    v.clear();
    v.into_iter()
        .map(|_| -> &'b str { unreachable!() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycled_vectors_keep_their_allocation() {
        let text = String::from("a b c");
        let mut v: Vec<&str> = Vec::with_capacity(100);
        v.extend(text.split(' '));
        let v: Vec<&'static str> = recycle(v);
        assert!(v.is_empty() && v.capacity() >= 100);
    }

    /// The distinct features as `(bytes, count)` in order of first occurrence, and whether
    /// two collided.
    fn listed(s: &Scratch, input: &str, source: Source) -> (Vec<(String, u32)>, bool) {
        let text = s.bufs.get(input, source);
        let d = &s.distinct;
        let l = d
            .first
            .iter()
            .zip(&d.counts)
            .map(|(f, &c)| (f.get(text).to_string(), c))
            .collect();
        (l, d.collided)
    }

    /// The streaming pass counts exactly what the whole-document pass does (same features,
    /// first-occurrence order, counts and keys), for texts of several chunks, in every mode,
    /// with n-grams, punctuation, stop words, non-ASCII characters and Han text.
    #[test]
    fn streaming_counts_equal_whole_document_counts() {
        use crate::rng::Rng;
        use crate::text::{StopWords, Tokenizer};
        let pieces = [
            "the", "The", "quick", "brown", "fox", ", ", ". ", "don't", "3.14", "  ", "\n",
            "naïve", "café", "中文", "分词", "東京", "😀", "e\u{301}", "ΣΑΣ", "x", " ", " ", " ",
            "a-b", "#tag", "\t", "🇫🇷", "ok",
        ];
        let mut rng = Rng::new(17);
        let mut texts: Vec<String> = vec![String::new(), " ".into(), "a".into(), "ab".into()];
        for len in [10usize, 5_000, 3 * CHUNK + 777, 5 * CHUNK] {
            let mut t = String::new();
            while t.len() < len {
                t.push_str(pieces[rng.below(pieces.len() as u64) as usize]);
                if rng.below(3) > 0 {
                    t.push(' ');
                }
            }
            texts.push(t);
        }
        // A long text of Han alone (no place to cut in word modes) and one of one letter.
        texts.push("中文分词".repeat(CHUNK / 3));
        texts.push("a".repeat(2 * CHUNK + 5));
        let modes: &[Mode] = if cfg!(feature = "cjk") {
            &[Mode::Words, Mode::Chars, Mode::Cjk, Mode::Auto]
        } else {
            &[Mode::Words, Mode::Chars]
        };
        for &mode in modes {
            for n in [1, 2, 3] {
                for punct in [false, true] {
                    let t = Tokenizer::builder()
                        .mode(mode)
                        .ngram(n)
                        .keep_punctuation(punct)
                        .stop_words(StopWords::from_words(["the", "x"]))
                        .build()
                        .unwrap();
                    for text in &texts {
                        let (mut a, mut b) = (Scratch::default(), Scratch::default());
                        let sa = features(&t.b, text, &mut a);
                        count(text, sa, &mut a);
                        let sb = streamed(&t.b, text, &mut b);
                        let what = format!("{mode:?} n={n} punct={punct} len={}", text.len());
                        assert_eq!(listed(&a, text, sa), listed(&b, text, sb), "{what}");
                        assert_eq!(a.distinct.keys, b.distinct.keys, "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn colliding_and_repeated_features_are_counted_apart() {
        let mut d = Distinct::default();
        let text = "abab";
        d.reset(4);
        let spans = [(0, 2), (2, 4), (1, 3), (0, 2)].map(|(start, end)| Span { start, end });
        d.insert_all(text, &spans);
        assert_eq!(d.counts, [3, 1]);
        assert_eq!(
            d.first,
            [Span { start: 0, end: 2 }, Span { start: 1, end: 3 }]
        );
        assert!(!d.collided);
        // Reset keeps the table empty: a second document starts from nothing.
        d.reset(1);
        d.insert_all(text, &[Span { start: 1, end: 3 }]);
        assert_eq!((d.len(), d.counts[0]), (1, 1));
        // Two different features with one key (forced here) are kept apart.
        d.reset(3);
        d.insert(text, Span { start: 0, end: 2 }, 42);
        d.insert(text, Span { start: 1, end: 3 }, 42);
        d.insert(text, Span { start: 2, end: 4 }, 42);
        assert_eq!(
            (d.len(), d.counts.as_slice(), d.collided),
            (2, &[2, 1][..], true)
        );
    }
}
