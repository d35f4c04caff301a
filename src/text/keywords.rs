//! jieba's own keyword weights ([`Weighting::JiebaKeywords`](super::Weighting::JiebaKeywords)),
//! from `jieba-rs`'s TF-IDF keyword extractor: its bundled IDF table (words it lacks get the
//! table's median IDF) and stop words, the weights of Python's
//! `jieba.analyse.extract_tags(text, withWeight=True)`.

use std::sync::OnceLock;

use jieba_rs::{KeywordExtract, KeywordExtractConfig, TfIdf};

use super::segment::jieba;

/// The extractor, built once per HMM setting (loading the IDF table takes a moment).
fn extractor(hmm: bool) -> &'static TfIdf {
    static WITH: OnceLock<TfIdf> = OnceLock::new();
    static WITHOUT: OnceLock<TfIdf> = OnceLock::new();
    let cell = if hmm { &WITH } else { &WITHOUT };
    cell.get_or_init(|| {
        let mut t = TfIdf::default();
        *t.config_mut() = KeywordExtractConfig::builder().use_hmm(hmm).build();
        t
    })
}

/// The keyword weights of `text`: `(word, tf · idf / total)` for every word jieba keeps as a
/// keyword (at least two characters, not one of its stop words), `total` being the number of
/// such words in the text, sorted by word. jieba segments `text` with the same dictionary and
/// HMM setting as the tokenizer's [`Mode::Cjk`](super::Mode::Cjk), so its words are the
/// tokenizer's.
pub(crate) fn weights(text: &str, hmm: bool, out: &mut Vec<(String, f64)>) {
    out.clear();
    let all = extractor(hmm).extract_keywords(jieba(), text, usize::MAX, Vec::new());
    out.extend(all.into_iter().map(|k| (k.keyword, k.weight)));
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand computation on a text of five keyword occurrences: 天气 twice, 北京, 烤鸭 and
    /// 纽约 once (的, 很, 好 are single characters), each weighted tf · idf / 5 with jieba's
    /// IDF (words it lacks get the median).
    #[test]
    fn weights_are_term_frequency_times_jieba_idf_over_the_total() {
        let mut w = Vec::new();
        weights("北京的天气很好，纽约的天气，烤鸭", false, &mut w);
        let words: Vec<&str> = w.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(words, ["北京", "天气", "烤鸭", "纽约"]);
        let one = |t: &str| {
            let mut x = Vec::new();
            weights(t, false, &mut x);
            x[0].1
        };
        // A one-keyword text gives its IDF: the weights are tf · idf / 5.
        for (word, tf) in [("北京", 1.0), ("天气", 2.0), ("烤鸭", 1.0), ("纽约", 1.0)] {
            let got = w.iter().find(|(k, _)| k == word).unwrap().1;
            assert!((got - tf * one(word) / 5.0).abs() < 1e-12, "{word}");
        }
    }
}
