//! Splitting normalised text into units: UAX #29 words, jieba words for Han text, or
//! grapheme clusters. Units are byte spans of the text, written into a reused buffer: no
//! string is allocated per unit.

use unicode_segmentation::UnicodeSegmentation;

/// A unit or feature: the bytes `start..end` of a text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    /// The span of `part`, a slice of `text`.
    #[inline]
    fn of(text: &str, part: &str) -> Span {
        let start = part.as_ptr() as usize - text.as_ptr() as usize;
        Span {
            start,
            end: start + part.len(),
        }
    }

    /// The bytes of this span in `text`.
    #[inline]
    pub fn get(self, text: &str) -> &str {
        &text[self.start..self.end]
    }
}

/// The shared jieba segmenter with its default dictionary, loaded on first use.
#[cfg(feature = "cjk")]
pub(crate) fn jieba() -> &'static jieba_rs::Jieba {
    static JIEBA: std::sync::OnceLock<jieba_rs::Jieba> = std::sync::OnceLock::new();
    JIEBA.get_or_init(jieba_rs::Jieba::new)
}

/// True for Han (CJK ideograph) characters: the CJK Unified Ideographs blocks and their
/// extensions A–H, the compatibility ideographs, and U+3007 (〇).
#[inline]
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

/// `char::is_alphanumeric`, answered without the Unicode tables for ASCII, for the CJK
/// Unified Ideographs block U+4E00–U+9FFF (every code point of which is an assigned letter),
/// and for the CJK punctuation of U+3000–U+303F and U+FF00–U+FF65 (checked against the
/// standard library for every character by a test).
#[inline]
pub(crate) fn is_alnum(c: char) -> bool {
    match c as u32 {
        0..=0x7F => c.is_ascii_alphanumeric(),
        0x4E00..=0x9FFF => true,
        // 々 〆 〇, the Hangzhou numerals 〡–〩, 〱–〵, 〸–〼.
        0x3000..=0x303F => {
            matches!(c as u32, 0x3005..=0x3007 | 0x3021..=0x3029 | 0x3031..=0x3035 | 0x3038..=0x303C)
        }
        // Full-width digits and Latin letters.
        0xFF00..=0xFF65 => matches!(c as u32, 0xFF10..=0xFF19 | 0xFF21..=0xFF3A | 0xFF41..=0xFF5A),
        _ => c.is_alphanumeric(),
    }
}

/// True for characters that `to_lowercase` leaves unchanged and that the lower-casing can
/// copy without a table lookup: Han, the CJK symbols and punctuation U+3000–U+303F, the
/// full-width punctuation of U+FF00–U+FF65 (not the full-width capitals U+FF21–U+FF3A).
#[inline]
fn caseless(c: char) -> bool {
    matches!(c as u32, 0x3000..=0x303F | 0xFF00..=0xFF20 | 0xFF3B..=0xFF65) || is_han(c)
}

/// True for tokens with at least one letter or digit (`char::is_alphanumeric`); the others
/// (punctuation, symbols, spaces) are "punctuation-only".
#[inline]
pub(crate) fn has_alnum(s: &str) -> bool {
    s.chars().any(is_alnum)
}

/// `text` lower-cased into `out` (cleared first), exactly as `str::to_lowercase`: ASCII and
/// Han characters (which have no case) are copied without a table lookup, and a text holding
/// a capital sigma, whose lower case depends on its neighbours, goes through
/// `str::to_lowercase` itself.
pub(crate) fn lowercase_into(text: &str, out: &mut String) {
    out.clear();
    if text.is_ascii() {
        out.push_str(text);
        out.make_ascii_lowercase();
        return;
    }
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else if caseless(c) {
            out.push(c);
        } else if c == 'Σ' {
            out.clear();
            out.push_str(&text.to_lowercase());
            return;
        } else {
            out.extend(c.to_lowercase());
        }
    }
}

/// `text` with every run of whitespace replaced by one space and both ends trimmed, into
/// `out` (cleared first): the words of `split_whitespace` joined by single spaces.
pub(crate) fn collapse_whitespace_into(text: &str, out: &mut String) {
    out.clear();
    let mut gap = false;
    for c in text.chars() {
        if c.is_whitespace() {
            gap = !out.is_empty();
        } else {
            if gap {
                out.push(' ');
                gap = false;
            }
            out.push(c);
        }
    }
}

/// UAX #29 words of `text` into `out`: only segments with a letter or digit, or, when
/// `keep_punctuation`, every segment that is not all whitespace. Spans are offset by `base`.
pub(crate) fn uax29(text: &str, base: usize, keep_punctuation: bool, out: &mut Vec<Span>) {
    let shift = |s: Span| Span {
        start: s.start + base,
        end: s.end + base,
    };
    if keep_punctuation {
        out.extend(
            text.split_word_bounds()
                .filter(|w| !w.chars().all(char::is_whitespace))
                .map(|w| shift(Span::of(text, w))),
        );
    } else {
        out.extend(text.unicode_words().map(|w| shift(Span::of(text, w))));
    }
}

/// jieba's words of `text` (precise mode), without all-whitespace tokens, into `out`; spans
/// are offset by `base`.
#[cfg(feature = "cjk")]
pub(crate) fn cjk(text: &str, base: usize, hmm: bool, out: &mut Vec<Span>) {
    out.extend(
        jieba()
            .cut(text, hmm)
            .into_iter()
            .filter(|t| !t.word.chars().all(char::is_whitespace))
            .map(|t| Span {
                start: base + t.byte_start,
                end: base + t.byte_end,
            }),
    );
}

/// Maximal runs of Han characters through jieba, everything else through UAX #29.
#[cfg(feature = "cjk")]
pub(crate) fn auto(text: &str, hmm: bool, keep_punctuation: bool, out: &mut Vec<Span>) {
    let run = |s: usize, e: usize, han: bool, out: &mut Vec<Span>| {
        if han {
            cjk(&text[s..e], s, hmm, out)
        } else {
            uax29(&text[s..e], s, keep_punctuation, out)
        }
    };
    let mut start = 0;
    let mut in_han = false;
    for (i, c) in text.char_indices() {
        let h = is_han(c);
        if h != in_han {
            if i > start {
                run(start, i, in_han, out);
            }
            start = i;
            in_han = h;
        }
    }
    if start < text.len() {
        run(start, text.len(), in_han, out);
    }
}

/// True for characters that form a grapheme cluster of their own whatever their neighbours
/// are, provided the neighbours are such characters too: printable ASCII, Han, the CJK
/// symbols and punctuation U+3001–U+3029 and the full-width forms U+FF01–U+FF5E. All have
/// the Grapheme_Cluster_Break property Other, are not Extended_Pictographic and take no part
/// in Indic conjuncts, so UAX #29 puts a boundary between any two of them (rule GB999).
#[inline]
pub(crate) fn is_simple(c: char) -> bool {
    matches!(c as u32, 0x20..=0x7E | 0x3001..=0x3029 | 0xFF01..=0xFF5E) || is_han(c)
}

/// Extended grapheme clusters of `text` into `out`, with each cluster's "has a letter or
/// digit" flag into `alnum`. Runs of [`is_simple`] characters are split per character;
/// around any other character, the region from the simple character before it to the first
/// simple character followed by another simple one goes through `unicode-segmentation`.
/// That is exact: both ends of such a region are boundaries (simple on both sides, rule
/// GB999), and the rules that look back further (emoji sequences, regional-indicator pairs,
/// Indic conjuncts) stop at a simple character.
pub(crate) fn graphemes(text: &str, out: &mut Vec<Span>, alnum: &mut Vec<bool>) {
    let base = out.len();
    let segment = |from: usize, to: usize, out: &mut Vec<Span>, alnum: &mut Vec<bool>| {
        for (i, g) in text[from..to].grapheme_indices(true) {
            out.push(Span {
                start: from + i,
                end: from + i + g.len(),
            });
            alnum.push(has_alnum(g));
        }
    };
    // The start of the region being collected, and whether its last character is simple.
    let mut region: Option<usize> = None;
    let mut last_simple = false;
    for (i, c) in text.char_indices() {
        let simple = is_simple(c);
        match region {
            None if simple => {
                out.push(Span {
                    start: i,
                    end: i + c.len_utf8(),
                });
                alnum.push(is_alnum(c));
            }
            None => {
                // Take back the simple character just before, if any: the region starts there.
                let from = match out.last() {
                    Some(&u) if out.len() > base && u.end == i => {
                        out.pop();
                        alnum.pop();
                        u.start
                    }
                    _ => i,
                };
                region = Some(from);
                last_simple = false;
            }
            Some(from) if simple && last_simple => {
                segment(from, i, out, alnum);
                region = None;
                out.push(Span {
                    start: i,
                    end: i + c.len_utf8(),
                });
                alnum.push(is_alnum(c));
            }
            Some(_) => last_simple = simple,
        }
    }
    if let Some(from) = region {
        segment(from, text.len(), out, alnum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn han_runs_and_whitespace() {
        assert!(is_han('中') && is_han('〇') && is_han('\u{20000}'));
        assert!(!is_han('a') && !is_han('，') && !is_han('の'));
        let mut s = String::new();
        collapse_whitespace_into("  a \t b\n\nc ", &mut s);
        assert_eq!(s, "a b c");
        collapse_whitespace_into(" \u{3000} ", &mut s);
        assert_eq!(s, "");
        #[cfg(feature = "cjk")]
        {
            let mut out = Vec::new();
            let text = "abc中文def";
            auto(text, false, false, &mut out);
            let words: Vec<&str> = out.iter().map(|s| s.get(text)).collect();
            assert_eq!(words, vec!["abc", "中文", "def"]);
        }
    }

    /// The shortcuts of `is_alnum` and `lowercase_into` agree with the standard library on
    /// every character they take a shortcut for, and on text with a final sigma.
    #[test]
    fn shortcuts_agree_with_the_standard_library() {
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            assert_eq!(is_alnum(c), c.is_alphanumeric(), "{c:?}");
            if c.is_ascii() || caseless(c) {
                let mut s = String::new();
                lowercase_into(&c.to_string(), &mut s);
                assert_eq!(s, c.to_string().to_lowercase(), "{c:?}");
            }
        }
        let mut s = String::new();
        for text in ["ΟΔΟΣ Σ ΣΑ", "Straße İstanbul ǅ", "ABC", "中文ABC"] {
            lowercase_into(text, &mut s);
            assert_eq!(s, text.to_lowercase());
        }
    }

    /// Per-character splitting of simple text is what UAX #29 gives, including next to the
    /// characters around the simple ranges.
    #[test]
    fn simple_characters_are_their_own_grapheme_clusters() {
        let mut text = String::new();
        for c in (0x20..=0x7Eu32)
            .chain(0x3001..=0x3029)
            .chain(0xFF01..=0xFF5E)
            .chain([0x4E00, 0x9FFF, 0x3007, 0x20000])
            .filter_map(char::from_u32)
        {
            text.push(c);
            text.push('中');
        }
        let (mut spans, mut alnum) = (Vec::new(), Vec::new());
        graphemes(&text, &mut spans, &mut alnum);
        let got: Vec<&str> = spans.iter().map(|s| s.get(&text)).collect();
        let want: Vec<&str> = text.graphemes(true).collect();
        assert_eq!(got, want);
        // Combining marks, emoji sequences, flags, Hangul and CR LF between simple characters:
        // the regions around them go through UAX #29, with the same clusters as the whole
        // text would give.
        for text in [
            "ce\u{301}中\u{302A}",
            "\u{301}ab",
            "a\u{301}",
            "中👨\u{200D}👩\u{200D}👧ab🇫🇷🇩🇪x🇫c",
            "ab\r\ncd\u{1100}\u{1161}\u{11A8}e\u{0915}\u{094D}\u{0937}f",
            "x\u{0600}1y",
            "é中é中é",
        ] {
            spans.clear();
            alnum.clear();
            graphemes(text, &mut spans, &mut alnum);
            let got: Vec<&str> = spans.iter().map(|s| s.get(text)).collect();
            assert_eq!(got, text.graphemes(true).collect::<Vec<_>>(), "{text:?}");
            let want: Vec<bool> = got
                .iter()
                .map(|g| g.chars().any(char::is_alphanumeric))
                .collect();
            assert_eq!(alnum, want, "{text:?}");
        }
    }
}
