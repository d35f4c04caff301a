//! Stop words: tokens dropped before weighting.

use std::path::Path;

use crate::error::Result;
use crate::io::lines::{LineReader, io_error, parse_error, utf8};
use crate::rng::hash_bytes;

/// The longest line of a stop-word file.
const MAX_WORD_LINE: usize = 64 << 10;

/// The built-in English list: articles, pronouns, auxiliaries, conjunctions and common
/// prepositions (a short list in the spirit of the classic SMART and NLTK lists, not a copy of
/// either).
pub const ENGLISH: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "being", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has",
    "have", "he", "her", "here", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "me", "my", "no", "not", "of", "on", "or", "our", "out", "she", "so", "such", "than", "that",
    "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "too", "up",
    "us", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why",
    "will", "with", "would", "you", "your",
];

/// A set of stop words, compared case-insensitively: words are stored lower-cased and tokens
/// are lower-cased before lookup.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StopWords {
    /// Sorted, distinct, lower-cased.
    words: Vec<String>,
}

impl StopWords {
    /// No stop words (the default).
    pub fn none() -> Self {
        StopWords::default()
    }

    /// The built-in English list [`ENGLISH`].
    pub fn english() -> Self {
        Self::from_words(ENGLISH.iter().copied())
    }

    /// A built-in list by name: `english` ([`english`](Self::english)) or `none`.
    ///
    /// ```
    /// use simlsh::text::StopWords;
    ///
    /// assert_eq!(StopWords::named("english")?, StopWords::english());
    /// assert_eq!(StopWords::english().name(), Some("english"));
    /// assert!(StopWords::named("klingon").is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`](crate::Error::InvalidParameter) for another name.
    pub fn named(name: &str) -> Result<Self> {
        match name {
            "english" => Ok(Self::english()),
            "none" => Ok(Self::none()),
            other => Err(crate::Error::param(
                "stop_words",
                format!("`{other}` is not a built-in list (english, none); give a list of words"),
            )),
        }
    }

    /// The name of the built-in list these words are (`none`, `english`), if they are one.
    pub fn name(&self) -> Option<&'static str> {
        if self.words.is_empty() {
            Some("none")
        } else if *self == Self::english() {
            Some("english")
        } else {
            None
        }
    }

    /// A set from any words (lower-cased, deduplicated).
    pub fn from_words<S: AsRef<str>>(words: impl IntoIterator<Item = S>) -> Self {
        let mut words: Vec<String> = words
            .into_iter()
            .map(|w| w.as_ref().to_lowercase())
            .collect();
        words.sort();
        words.dedup();
        StopWords { words }
    }

    /// Reads a stop-word file: UTF-8, one word per line; surrounding whitespace is trimmed,
    /// blank lines and lines starting with `#` are ignored. A line holding two words (inner
    /// whitespace) is an error naming the file and line, since it could never match a token,
    /// as is a line longer than 64 KiB (errors never quote the file's content).
    pub fn from_file(path: &Path) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(io_error(path))?;
        let mut r = LineReader::with_max(std::io::BufReader::new(file), MAX_WORD_LINE);
        let mut words = Vec::new();
        loop {
            let (line, b) = match r.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Err(parse_error(path, r.line(), e.to_string()));
                }
                Err(e) => return Err(io_error(path)(e)),
            };
            let w = utf8(path, line, b)?.trim();
            if w.is_empty() || w.starts_with('#') {
                continue;
            }
            if w.contains(char::is_whitespace) {
                return Err(parse_error(
                    path,
                    line,
                    "the line holds several words; give one word per line",
                ));
            }
            words.push(w.to_string());
        }
        Ok(Self::from_words(words))
    }

    /// The union of two sets.
    pub fn union(self, other: &StopWords) -> Self {
        Self::from_words(self.words.into_iter().chain(other.words.iter().cloned()))
    }

    /// True if `token`, lower-cased, is a stop word.
    pub fn contains(&self, token: &str) -> bool {
        if self.words.is_empty() {
            return false;
        }
        let found = |t: &str| self.words.binary_search_by(|w| w.as_str().cmp(t)).is_ok();
        if token.chars().any(char::is_uppercase) {
            found(&token.to_lowercase())
        } else {
            found(token)
        }
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// True when there are no stop words.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The words, sorted.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// XXH3-64 (seed 0) of the sorted words joined by `\n`: identifies the set in an IDF
    /// file's tokenizer description.
    pub fn fingerprint(&self) -> u64 {
        hash_bytes(self.words.join("\n").as_bytes(), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_insensitive_lookup_and_union() {
        let s = StopWords::from_words(["The", "a", "the"]);
        assert_eq!(s.len(), 2);
        assert!(s.contains("the") && s.contains("THE") && !s.contains("then"));
        let u = s.union(&StopWords::from_words(["Of"]));
        assert_eq!(u.words(), &["a", "of", "the"]);
        assert!(StopWords::english().contains("and"));
        let mut sorted = ENGLISH.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ENGLISH.len());
    }
}
