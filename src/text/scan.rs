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
    /// Empties the set and makes room for `n` insertions.
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
        let mask = self.slots.len() - 1;
        let mut keys = [0u64; AHEAD];
        for chunk in spans.chunks(AHEAD) {
            for (k, s) in keys.iter_mut().zip(chunk) {
                *k = hash_bytes(s.get(text).as_bytes(), IDF_HASH_SEED);
                prefetch(&self.slots[*k as usize & mask]);
            }
            for (&k, &s) in keys.iter().zip(chunk) {
                self.insert(text, s, k);
            }
        }
    }

    /// Counts one occurrence of the feature `span` of `text`, whose key is `key`.
    #[inline]
    fn insert(&mut self, text: &str, span: Span, key: u64) {
        let mask = self.slots.len() - 1;
        let mut i = key as usize & mask;
        loop {
            let s = self.slots[i];
            if s.idx == EMPTY {
                self.slots[i] = Slot {
                    key,
                    idx: self.keys.len() as u32,
                };
                self.slot_of.push(i as u32);
                self.keys.push(key);
                self.first.push(span);
                self.counts.push(1);
                return;
            }
            if s.key == key {
                let d = s.idx as usize;
                if self.first[d].get(text) == span.get(text) {
                    self.counts[d] += 1;
                    return;
                }
                self.collided = true;
            }
            i = (i + 1) & mask;
        }
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
    let mut source = if b.lowercase {
        segment::lowercase_into(input, &mut bufs.lower);
        Source::Lower
    } else {
        Source::Input
    };
    let chars = b.mode == Mode::Chars;
    if chars {
        let text = match source {
            Source::Lower => &bufs.lower,
            _ => input,
        };
        segment::collapse_whitespace_into(text, &mut bufs.collapsed);
        source = Source::Collapsed;
    }
    let text = bufs.get(input, source);
    match b.mode {
        Mode::Words => segment::uax29(text, 0, b.keep_punctuation, units),
        #[cfg(feature = "cjk")]
        Mode::Cjk => segment::cjk(text, 0, b.hmm, units),
        #[cfg(feature = "cjk")]
        Mode::Auto => segment::auto(text, b.hmm, b.keep_punctuation, units),
        #[cfg(not(feature = "cjk"))]
        Mode::Cjk | Mode::Auto => unreachable!("refused by TokenizerBuilder::build"),
        Mode::Chars => segment::graphemes(text, units, alnum),
    }
    if !chars {
        units.retain(|u| {
            let w = u.get(text);
            (b.keep_punctuation || segment::has_alnum(w)) && !b.stop_words.contains(w)
        });
    }
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
    let mut join = |ws: &[Span]| {
        let start = arena.len();
        for (k, w) in ws.iter().enumerate() {
            if k > 0 {
                arena.push(' ');
            }
            arena.push_str(w.get(text));
        }
        feats.push(Span {
            start,
            end: arena.len(),
        });
    };
    if units.len() < n {
        if !units.is_empty() {
            join(units);
        }
    } else {
        units.windows(n).for_each(join);
    }
    Source::Arena
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
        Weighting::Binary => w.resize(d.len(), 1.0),
        Weighting::Tf => w.extend(d.counts.iter().map(|&c| c as f32)),
        Weighting::TfIdf(idf) => {
            idf.idf_keys(&d.keys, &mut s.idf);
            w.extend(
                d.counts
                    .iter()
                    .zip(&s.idf)
                    .map(|(&c, &i)| (c as f64 * i) as f32),
            );
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
    let kept = &mut s.kept;
    kept.clear();
    kept.extend((0..d.len() as u32).filter(|&j| !w[j as usize].is_nan()));
    let k = b.top_k.unwrap_or(usize::MAX);
    if k < kept.len() || kept.len() < d.len() {
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
    let source = features(b, input, s);
    count(input, source, s);
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
