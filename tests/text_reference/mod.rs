//! The straightforward text pipeline, written from the module documentation of `simlsh::text`
//! with one `String` per token and sorting for the distinct features: the oracle that the
//! tokenizer's single-pass path must equal, feature for feature and bit for bit.

use simlsh::text::{Mode, StopWords, idf_key};
use unicode_segmentation::UnicodeSegmentation;

/// The settings that shape the features.
#[derive(Clone, Debug)]
pub struct Spec {
    pub mode: Mode,
    pub ngram: usize,
    pub lowercase: bool,
    pub keep_punctuation: bool,
    pub stop_words: StopWords,
    pub hmm: bool,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            mode: Mode::Words,
            ngram: 1,
            lowercase: true,
            keep_punctuation: false,
            stop_words: StopWords::none(),
            hmm: true,
        }
    }
}

/// The weights of the reference.
#[derive(Clone, Debug)]
pub enum RefWeighting {
    Binary,
    Tf,
    /// `(N, df of each idf_key)`: the reference document frequencies.
    TfIdf(u64, std::collections::HashMap<u64, u32>),
}

fn is_han(c: char) -> bool {
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

fn has_alnum(s: &str) -> bool {
    s.chars().any(char::is_alphanumeric)
}

#[cfg(feature = "cjk")]
fn jieba() -> &'static jieba_rs::Jieba {
    static J: std::sync::OnceLock<jieba_rs::Jieba> = std::sync::OnceLock::new();
    J.get_or_init(jieba_rs::Jieba::new)
}

#[cfg(feature = "cjk")]
fn cjk(text: &str, hmm: bool) -> Vec<String> {
    jieba()
        .cut(text, hmm)
        .into_iter()
        .map(|t| t.word.to_string())
        .filter(|w| !w.chars().all(char::is_whitespace))
        .collect()
}

#[cfg(not(feature = "cjk"))]
fn cjk(_: &str, _: bool) -> Vec<String> {
    unreachable!("jieba modes are not built")
}

fn uax29(text: &str, keep_punctuation: bool) -> Vec<String> {
    if keep_punctuation {
        text.split_word_bounds()
            .filter(|w| !w.chars().all(char::is_whitespace))
            .map(String::from)
            .collect()
    } else {
        text.unicode_words().map(String::from).collect()
    }
}

/// The features before weighting, in document order, repeats included.
pub fn tokens(s: &Spec, text: &str) -> Vec<String> {
    let text = if s.lowercase {
        text.to_lowercase()
    } else {
        text.to_string()
    };
    let chars = s.mode == Mode::Chars;
    let mut units: Vec<String> = match s.mode {
        Mode::Words => uax29(&text, s.keep_punctuation),
        Mode::Cjk => cjk(&text, s.hmm),
        Mode::Auto => {
            let mut out = Vec::new();
            let mut run = String::new();
            let mut han = false;
            let flush = |run: &mut String, han: bool, out: &mut Vec<String>| {
                if !run.is_empty() {
                    out.extend(if han {
                        cjk(run, s.hmm)
                    } else {
                        uax29(run, s.keep_punctuation)
                    });
                }
                run.clear();
            };
            for c in text.chars() {
                if is_han(c) != han {
                    flush(&mut run, han, &mut out);
                    han = is_han(c);
                }
                run.push(c);
            }
            flush(&mut run, han, &mut out);
            out
        }
        Mode::Chars => {
            let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
            collapsed.graphemes(true).map(String::from).collect()
        }
    };
    if !chars {
        units.retain(|u| (s.keep_punctuation || has_alnum(u)) && !s.stop_words.contains(u));
    }
    let sep = if chars { "" } else { " " };
    let mut out: Vec<String> = if s.ngram == 1 || units.is_empty() {
        units
    } else if units.len() < s.ngram {
        vec![units.join(sep)]
    } else {
        units.windows(s.ngram).map(|w| w.join(sep)).collect()
    };
    if chars && !s.keep_punctuation {
        out.retain(|t| has_alnum(t));
    }
    out
}

/// Document frequencies of the documents' reference tokens: `(N, df by idf_key)`.
pub fn fit(tokens: &[Vec<String>]) -> RefWeighting {
    let mut df = std::collections::HashMap::new();
    for d in tokens {
        let mut keys: Vec<u64> = d.iter().map(|t| idf_key(t)).collect();
        keys.sort_unstable();
        keys.dedup();
        for k in keys {
            *df.entry(k).or_insert(0u32) += 1;
        }
    }
    RefWeighting::TfIdf(tokens.len() as u64, df)
}

/// The weighted distinct features of a document, in order of first occurrence, top K
/// applied.
pub fn features(
    s: &Spec,
    w: &RefWeighting,
    top_k: Option<usize>,
    text: &str,
) -> (Vec<String>, Vec<f32>) {
    weigh(tokens(s, text), w, top_k)
}

/// [`features`] of a document given by its reference tokens.
pub fn weigh(toks: Vec<String>, w: &RefWeighting, top_k: Option<usize>) -> (Vec<String>, Vec<f32>) {
    let mut distinct: Vec<(String, u32)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for t in toks {
        match index.get(&t) {
            Some(&i) => distinct[i].1 += 1,
            None => {
                index.insert(t.clone(), distinct.len());
                distinct.push((t, 1));
            }
        }
    }
    let weights: Vec<f32> = distinct
        .iter()
        .map(|(t, c)| match w {
            RefWeighting::Binary => 1.0,
            RefWeighting::Tf => *c as f32,
            RefWeighting::TfIdf(n, df) => {
                let df = df.get(&idf_key(t)).copied().unwrap_or(0);
                let idf = simlsh::rng::ln((1.0 + *n as f64) / (1.0 + df as f64)) + 1.0;
                (*c as f64 * idf) as f32
            }
        })
        .collect();
    let mut keep: Vec<usize> = (0..distinct.len()).collect();
    if let Some(k) = top_k {
        keep.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]).then(a.cmp(&b)));
        keep.truncate(k);
        keep.sort_unstable();
    }
    (
        keep.iter().map(|&i| distinct[i].0.clone()).collect(),
        keep.iter().map(|&i| weights[i]).collect(),
    )
}
