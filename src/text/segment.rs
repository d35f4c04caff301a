//! Splitting normalised text into units: UAX #29 words, jieba words for Han text, or
//! grapheme clusters.

use std::sync::OnceLock;

use jieba_rs::Jieba;
use unicode_segmentation::UnicodeSegmentation;

/// The shared jieba segmenter with its default dictionary, loaded on first use.
pub(crate) fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}

/// True for Han (CJK ideograph) characters: the CJK Unified Ideographs blocks and their
/// extensions A–H, the compatibility ideographs, and U+3007 (〇).
pub(crate) fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3007
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xF900..=0xFAFF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2EBEF
        | 0x2EBF0..=0x2EE5F
        | 0x2F800..=0x2FA1F
        | 0x30000..=0x3134F
        | 0x31350..=0x323AF)
}

/// True for tokens with at least one letter or digit (`char::is_alphanumeric`); the others
/// (punctuation, symbols, spaces) are "punctuation-only".
pub(crate) fn has_alnum(s: &str) -> bool {
    s.chars().any(char::is_alphanumeric)
}

/// UAX #29 words of `text` into `out`: only segments with a letter or digit, or, when
/// `keep_punctuation`, every segment that is not all whitespace.
pub(crate) fn uax29<'a>(text: &'a str, keep_punctuation: bool, out: &mut Vec<&'a str>) {
    if keep_punctuation {
        out.extend(
            text.split_word_bounds()
                .filter(|w| !w.chars().all(char::is_whitespace)),
        );
    } else {
        out.extend(text.unicode_words());
    }
}

/// jieba's words of `text` (precise mode), into `out`, without all-whitespace tokens.
pub(crate) fn cjk<'a>(text: &'a str, hmm: bool, out: &mut Vec<&'a str>) {
    out.extend(
        jieba()
            .cut(text, hmm)
            .into_iter()
            .map(|t| t.word)
            .filter(|w| !w.chars().all(char::is_whitespace)),
    );
}

/// Maximal runs of Han characters through jieba, everything else through UAX #29.
pub(crate) fn auto<'a>(text: &'a str, hmm: bool, keep_punctuation: bool, out: &mut Vec<&'a str>) {
    let mut start = 0;
    let mut in_han = false;
    for (i, c) in text.char_indices() {
        let h = is_han(c);
        if h != in_han {
            if i > start {
                run(&text[start..i], in_han, hmm, keep_punctuation, out);
            }
            start = i;
            in_han = h;
        }
    }
    if start < text.len() {
        run(&text[start..], in_han, hmm, keep_punctuation, out);
    }
}

fn run<'a>(s: &'a str, han: bool, hmm: bool, keep_punctuation: bool, out: &mut Vec<&'a str>) {
    if han {
        cjk(s, hmm, out)
    } else {
        uax29(s, keep_punctuation, out)
    }
}

/// Extended grapheme clusters of `text`.
pub(crate) fn graphemes<'a>(text: &'a str, out: &mut Vec<&'a str>) {
    out.extend(text.graphemes(true));
}

/// `text` with every run of whitespace replaced by one space, trimmed at both ends.
pub(crate) fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for w in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn han_runs_and_whitespace() {
        assert!(is_han('中') && is_han('〇') && is_han('\u{20000}'));
        assert!(!is_han('a') && !is_han('，') && !is_han('の'));
        assert_eq!(collapse_whitespace("  a \t b\n\nc "), "a b c");
        let mut out = Vec::new();
        auto("abc中文def", false, false, &mut out);
        assert_eq!(out, vec!["abc", "中文", "def"]);
    }
}
