//! The text front-end: tokenizers (UAX #29, jieba, mixed, shingles), stop words, weights,
//! IDF against hand computation and scikit-learn's values, the IDF file, top-K, and corpus
//! signing (thread-count independence, near duplicates in the bundled Chinese poems); the
//! single pass against the straightforward pipeline; documents without features; feature
//! rows and exact cosines; document records, ids, unclosed CSV quotes and very long lines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use simlsh::io::{
    InputFormat, OnBadLine, TextOptions, documents, read_documents, read_documents_with_ids,
};
use simlsh::signers::{Distribution, FwhtSigner, HashingTrick, HyperplaneSigner, PooledSigner};
use simlsh::text::{DfCounter, Idf, Mode, SignOptions, StopWords, Tokenizer, Weighting, idf_key};
use simlsh::{Error, Signer};

mod text_reference;
use text_reference::{RefWeighting, Spec};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-text-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn tok(b: simlsh::text::TokenizerBuilder) -> Tokenizer {
    b.build().unwrap()
}

#[test]
fn english_words_lowercased_punctuation_and_stop_words_dropped() {
    let text = "The quick brown fox — jumps over the lazy dog's back, 2 times!";
    let t = Tokenizer::default();
    assert_eq!(
        t.tokens(text),
        [
            "the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog's", "back", "2",
            "times"
        ]
    );
    let t = tok(Tokenizer::builder().stop_words(StopWords::english()));
    assert_eq!(
        t.tokens(text),
        [
            "quick", "brown", "fox", "jumps", "over", "lazy", "dog's", "back", "2", "times"
        ]
    );
    let t = tok(Tokenizer::builder().lowercase(false).keep_punctuation(true));
    assert_eq!(
        t.tokens("Hi, Bob!"),
        ["Hi", ",", "Bob", "!"],
        "case kept, punctuation kept, spaces never"
    );
    // Stop words match case-insensitively even without lower-casing.
    let t = tok(Tokenizer::builder()
        .lowercase(false)
        .stop_words(StopWords::english()));
    assert_eq!(t.tokens("The Cat"), ["Cat"]);
}

#[test]
fn stop_word_files_are_read_with_comments_and_bad_lines_named() {
    let p = tmp("stop.txt");
    std::fs::write(&p, "# my list\n  Foo \n\nbar\n").unwrap();
    let s = StopWords::from_file(&p).unwrap();
    assert_eq!(s.words(), ["bar", "foo"]);
    let t = tok(Tokenizer::builder().stop_words(s.union(&StopWords::english())));
    assert_eq!(t.tokens("the foo and the baz bar"), ["baz"]);
    std::fs::write(&p, "ok\ntwo words\n").unwrap();
    match StopWords::from_file(&p).unwrap_err() {
        Error::Parse { line, reason, .. } => {
            assert_eq!(line, 2);
            // Named by its line, not quoted (a stop-word file may be any file).
            assert!(reason.contains("several words") && !reason.contains("two words"));
        }
        e => panic!("{e:?}"),
    }
}

#[cfg(feature = "cjk")]
#[test]
fn jieba_segments_chinese_and_auto_mode_mixes_segmenters() {
    let t = tok(Tokenizer::builder().mode(Mode::Cjk).hmm(false));
    assert_eq!(
        t.tokens("我们中出了一个叛徒"),
        ["我们", "中", "出", "了", "一个", "叛徒"]
    );
    // With the HMM (jieba's default), the unknown word 中出 is found.
    let t = tok(Tokenizer::builder().mode(Mode::Cjk));
    assert_eq!(
        t.tokens("我们中出了一个叛徒"),
        ["我们", "中出", "了", "一个", "叛徒"]
    );
    // UAX #29 alone splits Han text into single characters.
    assert_eq!(
        Tokenizer::default().tokens("我们中出了"),
        ["我", "们", "中", "出", "了"]
    );
    // Auto: jieba for Han runs, UAX #29 (with its rules for apostrophes and decimals) for the
    // rest; the full-width punctuation is dropped.
    let t = tok(Tokenizer::builder().mode(Mode::Auto).hmm(false));
    assert_eq!(
        t.tokens("我们中出了一个叛徒！Don't panic: 3.14 apples，今天天气很好"),
        [
            "我们",
            "中",
            "出",
            "了",
            "一个",
            "叛徒",
            "don't",
            "panic",
            "3.14",
            "apples",
            "今天天气",
            "很",
            "好"
        ]
    );
}

#[test]
fn shingles_of_characters_and_words() {
    let t = tok(Tokenizer::builder().mode(Mode::Chars).ngram(3));
    assert_eq!(
        t.tokens("  Hello,\t\tWorld! "),
        [
            "hel", "ell", "llo", "lo,", "o, ", ", w", " wo", "wor", "orl", "rld", "ld!"
        ]
    );
    // Grapheme clusters, not code points: é as e + combining accent is one unit.
    let t = tok(Tokenizer::builder().mode(Mode::Chars).ngram(2));
    assert_eq!(t.tokens("ce\u{301}!"), ["ce\u{301}", "e\u{301}!"]);
    // A shingle with no letter or digit is dropped.
    assert_eq!(t.tokens("a!? b"), ["a!", " b"]);
    // Shorter than n: one shingle.
    let t = tok(Tokenizer::builder().mode(Mode::Chars).ngram(5));
    assert_eq!(t.tokens("abc"), ["abc"]);
    assert!(t.tokens("  ").is_empty());
    // Word shingles.
    let t = tok(Tokenizer::builder().ngram(2));
    assert_eq!(t.tokens("A b, c!"), ["a b", "b c"]);
    if cfg!(feature = "cjk") {
        let t = tok(Tokenizer::builder().mode(Mode::Cjk).hmm(false).ngram(2));
        assert_eq!(t.tokens("一个叛徒"), ["一个 叛徒"]);
    }
    assert!(matches!(
        Tokenizer::builder().ngram(0).build(),
        Err(Error::InvalidParameter { name: "ngram", .. })
    ));
}

#[test]
fn binary_and_tf_weights_count_distinct_features_in_first_occurrence_order() {
    let t = Tokenizer::default();
    let f = t.features("b a a c c c b d");
    assert_eq!(f.tokens, ["b", "a", "c", "d"]);
    assert_eq!(f.weights, [2.0, 2.0, 3.0, 1.0]);
    let t = tok(Tokenizer::builder().weighting(Weighting::Binary));
    assert_eq!(t.features("b a a c").weights, [1.0; 3]);
    assert!(t.features(" ,.; ").is_empty());
}

#[test]
fn top_k_keeps_the_heaviest_with_ties_broken_by_first_occurrence() {
    let doc = "b a a c c d";
    let top = |k| tok(Tokenizer::builder().top_k(Some(k))).features(doc);
    let f = top(2);
    assert_eq!(
        (f.tokens, f.weights),
        (vec!["a".into(), "c".into()], vec![2.0, 2.0])
    );
    let f = top(1);
    assert_eq!(f.tokens, ["a"], "a and c tie; a occurs first");
    let f = top(3);
    assert_eq!(
        f.tokens,
        ["b", "a", "c"],
        "b and d tie; b occurs first; document order kept"
    );
    assert_eq!(top(10).tokens, ["b", "a", "c", "d"]);
    assert!(Tokenizer::builder().top_k(Some(0)).build().is_err());
}

/// scikit-learn's `TfidfVectorizer` documentation corpus and its `idf_` values
/// (`smooth_idf=True`): `ln((1 + 4) / (1 + df)) + 1`.
#[test]
fn idf_matches_scikit_learn_and_hand_computation() {
    let corpus = [
        "This is the first document.",
        "This document is the second document.",
        "And this is the third one.",
        "Is this the first document?",
    ];
    let idf = Idf::fit(&Tokenizer::default(), corpus);
    assert_eq!(idf.docs(), 4);
    assert_eq!(idf.len(), 9);
    let sklearn = [
        ("and", 1.916290731874155),
        ("document", 1.2231435513142097),
        ("first", 1.5108256237659907),
        ("is", 1.0),
        ("one", 1.916290731874155),
        ("second", 1.916290731874155),
        ("the", 1.0),
        ("third", 1.916290731874155),
        ("this", 1.0),
    ];
    for (w, v) in sklearn {
        let got = idf.idf(w);
        assert!(
            (got - v).abs() <= 4.0 * f64::EPSILON * v,
            "{w}: {got} vs {v}"
        );
    }
    assert_eq!(idf.df("document"), 3);
    assert_eq!(idf.df_key(idf_key("first")), 2);
    // Unseen: df = 0.
    assert!((idf.idf("zebra") - (5f64.ln() + 1.0)).abs() < 1e-15);
    // TF-IDF weights: count × idf.
    let t = tok(Tokenizer::builder().idf(idf.clone()));
    let f = t.features("document document second");
    assert_eq!(f.tokens, ["document", "second"]);
    assert_eq!(
        f.weights,
        [
            (2.0 * 1.2231435513142097f64) as f32,
            1.916290731874155f64 as f32
        ]
    );

    // Hand computation on a small corpus: N = 3, df(a) = 3, df(b) = df(c) = df(d) = 1.
    let idf = Idf::fit(&Tokenizer::default(), ["a b", "a c", "a a d"]);
    assert_eq!(
        idf.entries().len(),
        4,
        "one entry per distinct token, repeats counted once"
    );
    assert_eq!((idf.df("a"), idf.df("a a")), (3, 0));
    assert_eq!(idf.idf("a"), 1.0);
    assert!((idf.idf("b") - (1.0 + 2f64.ln())).abs() < 1e-15);
    // Entries are sorted by key, keyed by the fixed hash.
    let mut keys: Vec<u64> = ["a", "b", "c", "d"].iter().map(|t| idf_key(t)).collect();
    keys.sort();
    assert_eq!(idf.entries().iter().map(|e| e.0).collect::<Vec<_>>(), keys);
}

#[test]
fn idf_counting_is_the_same_one_by_one_in_batches_and_on_any_thread_count() {
    let docs: Vec<String> = (0..3000)
        .map(|i| format!("w{} w{} w{} common", i % 7, i % 11, i % 13))
        .collect();
    let t = Tokenizer::default();
    let mut c = DfCounter::new(&t);
    for d in &docs {
        c.add(d);
    }
    let one = c.finish();
    assert_eq!(one.df("common"), 3000);
    assert_eq!(
        one.df("w3"),
        (0..3000)
            .filter(|i| [i % 7, i % 11, i % 13].contains(&3))
            .count() as u32
    );
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        assert_eq!(pool.install(|| Idf::fit(&t, &docs)), one);
    }
}

#[test]
fn idf_files_round_trip_and_errors_name_the_line() {
    let t = tok(Tokenizer::builder()
        .mode(Mode::Chars)
        .ngram(2)
        .stop_words(StopWords::english()));
    let idf = Idf::fit(&t, ["我们中出了一个叛徒", "今天天气很好", "我们今天"]);
    let p = tmp("model.idf");
    idf.save(&p).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "simlsh-idf 1");
    assert_eq!(lines[1], "hash xxh3-64 seed 0");
    assert_eq!(lines[2], format!("tokenizer {}", t.config()));
    assert_eq!(lines[3], "documents 3");
    assert_eq!(lines[4], format!("entries {}", idf.len()));
    let back = Idf::load(&p).unwrap();
    assert_eq!(back, idf);
    // Reused on new documents by a tokenizer of the same configuration only.
    let again = tok(t.to_builder().idf(back.clone()));
    assert_eq!(again.features("我们").weights, [(back.idf("我们")) as f32]);
    assert!(matches!(
        Tokenizer::builder().idf(back).build(),
        Err(Error::InvalidParameter { name: "idf", .. })
    ));

    let corrupt = |name: &str, edit: &dyn Fn(&mut Vec<String>)| {
        let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        edit(&mut l);
        let p = tmp(name);
        std::fs::write(&p, l.join("\n") + "\n").unwrap();
        Idf::load(&p).unwrap_err()
    };
    let at = |e: Error| match e {
        Error::Parse { line, reason, .. } => (line, reason),
        other => panic!("{other:?}"),
    };
    let (line, r) = at(corrupt("magic.idf", &|l| l[0] = "idf 1".into()));
    assert_eq!(line, 1);
    assert!(r.contains("not an IDF file"));
    assert!(matches!(
        corrupt("version.idf", &|l| l[0] = "simlsh-idf 2".into()),
        Error::Version {
            expected: 1,
            got: 2,
            ..
        }
    ));
    let (line, r) = at(corrupt("hash.idf", &|l| l[1] = "hash fnv".into()));
    assert_eq!((line, r.contains("unsupported token hash")), (2, true));
    let (line, r) = at(corrupt("entry.idf", &|l| l[6] = "xyz 1".into()));
    assert_eq!((line, r.contains("16 hexadecimal digits")), (7, true));
    let (line, r) = at(corrupt("df.idf", &|l| {
        let k = l[5].split(' ').next().unwrap().to_string();
        l[5] = format!("{k} 4");
    }));
    assert_eq!((line, r.contains("df 4 outside 1..=3")), (6, true));
    let (line, r) = at(corrupt("order.idf", &|l| l.swap(5, 6)));
    assert_eq!((line, r.contains("increasing")), (7, true));
    let n = lines.len();
    let (line, r) = at(corrupt("short.idf", &|l| {
        l.pop();
    }));
    assert_eq!((line, r.contains("unexpected end of file")), (n, true));
    let (line, r) = at(corrupt("long.idf", &|l| l.push(l[n - 1].clone())));
    assert_eq!((line, r.contains("more entries")), (n + 1, true));
    // Errors name the line, never quote it (the file may be anything: `/etc/shadow`).
    let (line, r) = at(corrupt("secret.idf", &|l| {
        l[6] = "root:$6$salt$hash:19000:0:99999:7:::".into()
    }));
    assert_eq!(line, 7);
    assert!(!r.contains("root") && !r.contains("$6$"), "{r}");
    // A line without end (one long line, `/dev/zero`) is an error after 64 KiB, not a buffer
    // that grows until memory runs out; the same for stop words.
    let p = tmp("one-line.idf");
    std::fs::write(&p, vec![b'a'; 200_000]).unwrap();
    let (line, r) = at(Idf::load(&p).unwrap_err());
    assert_eq!((line, r.contains("longer than")), (1, true));
    assert!(matches!(
        StopWords::from_file(&p),
        Err(Error::Parse { line: 1, .. })
    ));
    #[cfg(unix)]
    {
        let zero = Path::new("/dev/zero");
        assert_eq!(at(Idf::load(zero).unwrap_err()).0, 1);
        assert!(matches!(
            StopWords::from_file(zero),
            Err(Error::Parse { line: 1, .. })
        ));
    }
}

#[test]
fn sign_corpus_equals_per_document_signing_on_any_thread_count() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/healthtweets-10k");
    let p = root.join("healthtweets-10k.csv");
    let (docs, _) = read_documents(&p, InputFormat::Csv, &TextOptions::default()).unwrap();
    let docs: Vec<&str> = docs[..1500].iter().map(|d| d.text.as_str()).collect();
    let base = tok(Tokenizer::builder().stop_words(StopWords::english()));
    let t = tok(base
        .to_builder()
        .idf(Idf::fit(&base, &docs))
        .top_k(Some(12)));
    let hashing = HashingTrick::builder().bits(100).seed(9).build().unwrap();
    let pooled = PooledSigner::builder().bits(64).seed(9).build().unwrap();
    let fwht = FwhtSigner::builder()
        .bits(300)
        .buckets(128)
        .seed(9)
        .build()
        .unwrap();
    let signers: [&dyn Signer; 3] = [&hashing, &pooled, &fwht];
    for s in signers {
        let reference = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| t.sign_corpus(s, &docs).unwrap());
        for (i, d) in docs.iter().enumerate().step_by(37) {
            let f = t.features(d);
            assert_eq!(
                reference.get(i),
                s.sign_tokens(&f.token_refs(), &f.weights).unwrap()
            );
            assert_eq!(reference.get(i), t.sign(s, d).unwrap());
        }
        for threads in [2, 3, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            assert_eq!(pool.install(|| t.sign_corpus(s, &docs).unwrap()), reference);
        }
    }
    // A signer that does not hash tokens is refused.
    let h = HyperplaneSigner::builder()
        .dim(8)
        .bits(64)
        .distribution(Distribution::Gaussian)
        .build()
        .unwrap();
    assert!(matches!(
        t.sign_corpus(&h, &docs),
        Err(Error::Unsupported(_))
    ));
}

/// The classic Chinese pipeline on the bundled poems (jieba, TF-IDF keywords, 64-bit
/// simhash): exact duplicates collide, near duplicates are close, unrelated poems sit near
/// 32 of 64 bits.
#[cfg(feature = "cjk")]
#[test]
fn chinese_poems_duplicates_collide_and_unrelated_poems_are_half_apart() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/chinese-poetry-3k/poems.jsonl");
    let (docs, _) = read_documents(&p, InputFormat::JsonLines, &TextOptions::default()).unwrap();
    let docs: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
    let base = tok(Tokenizer::builder().mode(Mode::Cjk));
    let t = tok(base
        .to_builder()
        .idf(Idf::fit(&base, &docs))
        .top_k(Some(20)));
    let signer = HashingTrick::builder().bits(64).seed(7).build().unwrap();
    let sigs = t.sign_corpus(&signer, &docs).unwrap();

    let first_line = |d: &str| d.split(['，', '。', '\n']).next().unwrap().to_string();
    use std::collections::BTreeMap;
    let mut by_text: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut by_first: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, d) in docs.iter().enumerate() {
        by_text.entry(d).or_default().push(i);
        by_first.entry(first_line(d)).or_default().push(i);
    }
    let exact: Vec<&Vec<usize>> = by_text.values().filter(|g| g.len() > 1).collect();
    assert!(
        exact.len() >= 150,
        "the sample has 150 groups of exact duplicates"
    );
    for g in &exact {
        for &j in &g[1..] {
            assert_eq!(sigs.distance(g[0], j), 0);
        }
    }
    // Near duplicates: same first line, different text.
    let mut near: Vec<u32> = by_first
        .values()
        .filter(|g| g.len() > 1 && docs[g[0]] != docs[g[1]])
        .map(|g| sigs.distance(g[0], g[1]))
        .collect();
    near.sort();
    assert!(near.len() >= 200);
    let median = near[near.len() / 2];
    assert!(median <= 16, "near-duplicate median distance {median}");
    assert!(near.iter().any(|&d| d <= 3));

    // Unrelated pairs (different first lines): for independent signatures the distance is
    // Binomial(64, 1/2), mean 32, sd 4; over ~2000 pairs the mean's standard error is ~0.1.
    // Common characters make unrelated poems slightly similar (cos > 0), pulling the mean a
    // little below 32; the band allows for that.
    let (mut sum, mut sq, mut n) = (0f64, 0f64, 0f64);
    for i in 0..2000usize {
        let (a, b) = ((i * 7919) % docs.len(), (i * 104_729 + 13) % docs.len());
        if first_line(docs[a]) != first_line(docs[b]) {
            let d = sigs.distance(a, b) as f64;
            sum += d;
            sq += d * d;
            n += 1.0;
        }
    }
    let mean = sum / n;
    let sd = (sq / n - mean * mean).sqrt();
    assert!((30.5..=33.0).contains(&mean), "unrelated mean {mean}");
    assert!((3.0..=5.0).contains(&sd), "unrelated sd {sd}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

    /// TF counts every token once; top-K equals a brute-force selection: sort the distinct
    /// features by (weight descending, first occurrence ascending), keep K, restore order.
    #[test]
    fn tf_and_top_k_match_a_brute_force_oracle(
        words in proptest::collection::vec(0u8..8, 0..40),
        k in 1usize..10,
    ) {
        let doc: Vec<String> = words.iter().map(|w| format!("w{w}")).collect();
        let text = doc.join(" ");
        let all = Tokenizer::default().features(&text);
        proptest::prop_assert_eq!(all.weights.iter().sum::<f32>() as usize, doc.len());
        let mut firsts: Vec<(usize, &String)> = Vec::new();
        for (i, w) in doc.iter().enumerate() {
            if !firsts.iter().any(|(_, x)| *x == w) {
                firsts.push((i, w));
            }
        }
        let count = |w: &String| doc.iter().filter(|x| *x == w).count() as f32;
        let mut ranked = firsts.clone();
        ranked.sort_by(|a, b| count(b.1).total_cmp(&count(a.1)).then(a.0.cmp(&b.0)));
        ranked.truncate(k);
        ranked.sort();
        let want: Vec<String> = ranked.iter().map(|(_, w)| (*w).clone()).collect();
        let got = tok(Tokenizer::builder().top_k(Some(k))).features(&text);
        proptest::prop_assert_eq!(got.tokens, want);
    }
}

fn bundled(name: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets");
    let p = match name {
        "poems" => root.join("chinese-poetry-3k/poems.jsonl"),
        _ => root.join("healthtweets-10k/healthtweets-10k.csv"),
    };
    let format = InputFormat::from_path(&p).unwrap();
    let (docs, _) = read_documents(&p, format, &TextOptions::default()).unwrap();
    docs.into_iter().map(|d| d.text).collect()
}

fn tokenizer_of(s: &Spec) -> Tokenizer {
    tok(Tokenizer::builder()
        .mode(s.mode)
        .ngram(s.ngram)
        .lowercase(s.lowercase)
        .keep_punctuation(s.keep_punctuation)
        .stop_words(s.stop_words.clone())
        .hmm(s.hmm))
}

/// Every mode, with shingles, stop words, punctuation kept and case kept.
fn reference_specs() -> Vec<Spec> {
    let mut out = Vec::new();
    let mut modes = vec![Mode::Words, Mode::Chars];
    if cfg!(feature = "cjk") {
        modes.extend([Mode::Cjk, Mode::Auto]);
    }
    for mode in modes {
        for ngram in [1, 2, 3] {
            out.push(Spec {
                mode,
                ngram,
                ..Spec::default()
            });
        }
        out.push(Spec {
            mode,
            ngram: 2,
            lowercase: false,
            keep_punctuation: true,
            stop_words: StopWords::english().union(&StopWords::from_words(["的", "之", "風"])),
            hmm: false,
        });
    }
    out
}

/// The single-pass tokenizer against the straightforward pipeline (`text_reference`) on the
/// bundled poems and tweets, for every mode: the same tokens, the same document frequencies,
/// the same weighted features in the same order, and bit-identical signatures from
/// `sign_corpus` (hashing trick at 256 bits, pooled at 64).
#[test]
fn single_pass_equals_the_straightforward_pipeline_on_the_bundled_data() {
    let hashing = HashingTrick::builder().bits(256).seed(5).build().unwrap();
    let pooled = PooledSigner::builder().bits(64).seed(5).build().unwrap();
    for set in ["poems", "tweets"] {
        let all = bundled(set);
        for spec in reference_specs() {
            // All 3,500 poems, 3,000 of the tweets.
            let n = if set == "tweets" { 3000 } else { all.len() };
            let docs: Vec<&str> = all[..n].iter().map(String::as_str).collect();
            let base = tokenizer_of(&spec);
            let ref_tokens: Vec<Vec<String>> = docs
                .iter()
                .map(|d| text_reference::tokens(&spec, d))
                .collect();
            for (d, want) in docs.iter().zip(&ref_tokens).step_by(7) {
                assert_eq!(&base.tokens(d), want, "{spec:?}: {d}");
            }
            let idf = Idf::fit(&base, &docs);
            let RefWeighting::TfIdf(n_docs, df) = text_reference::fit(&ref_tokens) else {
                unreachable!()
            };
            assert_eq!(idf.docs(), n_docs);
            let mut want: Vec<(u64, u32)> = df.iter().map(|(&k, &v)| (k, v)).collect();
            want.sort_unstable();
            assert_eq!(
                idf.entries(),
                &want[..],
                "{set} {spec:?}: document frequencies"
            );
            let cases = [
                (Weighting::Binary, RefWeighting::Binary, None),
                (Weighting::Tf, RefWeighting::Tf, Some(5)),
                (
                    Weighting::TfIdf(std::sync::Arc::new(idf.clone())),
                    RefWeighting::TfIdf(n_docs, df.clone()),
                    None,
                ),
                (
                    Weighting::TfIdf(std::sync::Arc::new(idf)),
                    RefWeighting::TfIdf(n_docs, df),
                    Some(20),
                ),
            ];
            for (weighting, reference, top_k) in cases {
                let t = tok(base.to_builder().weighting(weighting).top_k(top_k));
                let signers: [&dyn Signer; 2] = [&hashing, &pooled];
                let sigs = signers.map(|s| t.sign_corpus(s, &docs).unwrap());
                for (i, d) in docs.iter().enumerate() {
                    let (tokens, weights) =
                        text_reference::weigh(ref_tokens[i].clone(), &reference, top_k);
                    let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
                    for (s, sigs) in signers.iter().zip(&sigs) {
                        assert_eq!(
                            sigs.get(i),
                            s.sign_tokens(&refs, &weights).unwrap(),
                            "{set} {spec:?} {top_k:?} row {i}"
                        );
                    }
                    if i % 5 == 0 {
                        let f = t.features(d);
                        assert_eq!((f.tokens, f.weights), (tokens, weights));
                    }
                }
            }
        }
    }
}

fn write(name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = tmp(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The line and reason of a parse error at `path`.
fn parse_error_at(e: Error, path: &Path) -> (usize, String) {
    match e {
        Error::Parse {
            path: p,
            line,
            reason,
        } => {
            assert_eq!(p, path);
            (line, reason)
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

/// Empty, punctuation-only and stop-word-only documents have no feature: they are flagged
/// (count 0) and have the all-zero signature, which every other such document shares.
#[test]
fn documents_without_features_are_flagged() {
    let docs = ["", "?! ...", "the of and", "the cat sat", "  \t "];
    let t = tok(Tokenizer::builder().stop_words(StopWords::english()));
    let s = HashingTrick::builder().bits(128).seed(3).build().unwrap();
    let c = t
        .sign_corpus_with(&s, &docs, SignOptions::default())
        .unwrap();
    assert_eq!(c.features, [0, 0, 0, 2, 0]);
    assert_eq!(c.featureless(), [0, 1, 2, 4]);
    assert!(c.rows.is_none());
    for (i, d) in docs.iter().enumerate() {
        assert_eq!(t.features(d).is_empty(), c.is_featureless(i));
        let zero = c.signatures.row(i).iter().all(|&w| w == 0);
        assert!(zero || !c.is_featureless(i));
    }
    assert_eq!(c.signatures, t.sign_corpus(&s, &docs).unwrap());
    // Characters: a shingle needs a letter or digit; jieba keywords need two characters.
    let chars = tok(Tokenizer::builder().mode(Mode::Chars).ngram(3));
    let c = chars
        .sign_corpus_with(&s, &["!!!", "a!!"], SignOptions::default())
        .unwrap();
    assert_eq!(c.features, [0, 1]);
}

/// Feature rows hold, for each document, the features and weights it was signed with, as
/// `(idf_key, weight)` sorted by key; their cosines equal a brute-force cosine over the
/// feature strings; they do not depend on the thread count, and chunked signing appended
/// gives the same corpus.
#[test]
fn feature_rows_hold_the_signed_weights_and_give_exact_cosines() {
    let all = bundled("tweets");
    let docs: Vec<&str> = all[..2000].iter().map(String::as_str).collect();
    let base = tok(Tokenizer::builder().stop_words(StopWords::english()));
    let t = tok(base
        .to_builder()
        .idf(Idf::fit(&base, &docs))
        .top_k(Some(15)));
    let s = HashingTrick::builder().bits(64).seed(2).build().unwrap();
    let opts = SignOptions::default().rows(true);
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| t.sign_corpus_with(&s, &docs, opts).unwrap());
    let rows = one.rows.as_ref().unwrap();
    assert_eq!((rows.len(), one.len()), (docs.len(), docs.len()));
    assert_eq!(one.signatures, t.sign_corpus(&s, &docs).unwrap());
    // The rows without signing: the same rows.
    assert_eq!(&t.feature_rows(&docs), rows);
    let feats: Vec<_> = docs.iter().map(|d| t.features(d)).collect();
    for (i, f) in feats.iter().enumerate() {
        let (keys, weights) = rows.row(i);
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!((keys.to_vec(), weights.to_vec()), f.sparse_row());
        assert_eq!(one.features[i] as usize, f.len());
    }
    // Brute force: cosine of the weighted feature strings, in f64.
    let cosine = |a: &simlsh::text::Features, b: &simlsh::text::Features| {
        let wa: HashMap<&str, f64> = a
            .tokens
            .iter()
            .map(String::as_str)
            .zip(a.weights.iter().map(|&w| w as f64))
            .collect();
        let dot: f64 = b
            .tokens
            .iter()
            .zip(&b.weights)
            .filter_map(|(t, &w)| wa.get(t.as_str()).map(|&x| x * w as f64))
            .sum();
        let norm = |w: &[f32]| w.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
        let n = norm(&a.weights) * norm(&b.weights);
        if n == 0.0 { 0.0 } else { dot / n }
    };
    let mut positive = 0;
    for i in (0..docs.len()).step_by(13) {
        for j in (0..docs.len()).step_by(17) {
            let want = cosine(&feats[i], &feats[j]);
            let got = rows.cosine(i, j);
            assert!((got - want).abs() <= 1e-12, "{i} {j}: {got} vs {want}");
            positive += usize::from(want > 0.0);
        }
    }
    assert!(
        positive > 100,
        "the pairs checked share features: {positive}"
    );
    // Thread count and chunking change nothing.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    assert_eq!(
        pool.install(|| t.sign_corpus_with(&s, &docs, opts).unwrap()),
        one
    );
    let mut chunked = t.sign_corpus_with(&s, &docs[..700], opts).unwrap();
    chunked
        .append(t.sign_corpus_with(&s, &docs[700..], opts).unwrap())
        .unwrap();
    assert_eq!(chunked, one);
    let plain = t
        .sign_corpus_with(&s, &docs[..5], SignOptions::default())
        .unwrap();
    assert!(chunked.append(plain).is_err(), "rows on one side only");
}

/// Documents carry their 0-based record number (bad records counted, blank JSON lines not)
/// and, when asked, the id field; missing, empty and repeated ids are bad lines naming the
/// line (and the first line of a repeat).
#[test]
fn documents_carry_record_numbers_and_ids() {
    let p = write(
        "ids.jsonl",
        "{\"id\": \"a\", \"text\": \"one\"}\n\n{\"id\": 7, \"text\": \"two\"}\nnot json\n{\"text\": \"no id\"}\n{\"id\": \"a\", \"text\": \"again\"}\n{\"id\": \"\", \"text\": \"empty\"}\n{\"id\": null, \"text\": \"null\"}\n{\"id\": \"b\", \"text\": \"last\"}\n",
    );
    let skip = TextOptions {
        on_bad: OnBadLine::Skip,
        ..TextOptions::default()
    };
    let (docs, bad) = read_documents(&p, InputFormat::JsonLines, &skip).unwrap();
    let got: Vec<(usize, usize, &str)> = docs
        .iter()
        .map(|d| (d.line, d.record, d.text.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (1, 0, "one"),
            (3, 1, "two"),
            (5, 3, "no id"),
            (6, 4, "again"),
            (7, 5, "empty"),
            (8, 6, "null"),
            (9, 7, "last")
        ]
    );
    assert!(docs.iter().all(|d| d.id.is_none()));
    assert_eq!(bad.count, 1);
    let (docs, bad) =
        read_documents_with_ids(&p, InputFormat::JsonLines, &skip, Some("id")).unwrap();
    let got: Vec<(usize, Option<&str>)> =
        docs.iter().map(|d| (d.record, d.id.as_deref())).collect();
    assert_eq!(got, [(0, Some("a")), (1, Some("7")), (7, Some("b"))]);
    let reasons: Vec<String> = bad.first.iter().map(|e| e.to_string()).collect();
    assert_eq!(bad.count, 5, "{reasons:?}");
    assert!(reasons[1].contains(":5: no id field `id`"), "{reasons:?}");
    assert!(
        reasons[2].contains(":6: duplicate id `a` (first at line 1)"),
        "{reasons:?}"
    );
    assert!(reasons[3].contains(":7: empty id"), "{reasons:?}");
    assert!(
        reasons[4].contains(":8: id field `id` is null"),
        "{reasons:?}"
    );
    // Failing on the first bad line: the invalid JSON at line 4.
    let e = read_documents_with_ids(
        &p,
        InputFormat::JsonLines,
        &TextOptions::default(),
        Some("id"),
    )
    .unwrap_err();
    assert_eq!(parse_error_at(e, &p).0, 4);

    let p = write(
        "ids.csv",
        "key,text\nx1,\"first\nrecord\"\nx2,second\n,third\nx1,fourth\n",
    );
    let (docs, bad) = read_documents_with_ids(&p, InputFormat::Csv, &skip, Some("key")).unwrap();
    let got: Vec<(usize, usize, Option<&str>)> = docs
        .iter()
        .map(|d| (d.line, d.record, d.id.as_deref()))
        .collect();
    assert_eq!(got, [(2, 0, Some("x1")), (4, 1, Some("x2"))]);
    let reasons: Vec<String> = bad.first.iter().map(|e| e.to_string()).collect();
    assert!(reasons[0].contains(":5: empty id in `key`"), "{reasons:?}");
    assert!(
        reasons[1].contains(":6: duplicate id `x1` (first at line 2)"),
        "{reasons:?}"
    );
    let e = documents(&p, InputFormat::Csv, &TextOptions::default())
        .unwrap()
        .with_ids("nope")
        .err()
        .unwrap();
    let (line, reason) = parse_error_at(e, &p);
    assert_eq!(line, 1);
    assert!(reason.contains("no column `nope`"), "{reason}");
    let p = write("ids.txt", "a\nb\n");
    let (docs, _) = read_documents(&p, InputFormat::Text, &TextOptions::default()).unwrap();
    assert_eq!(docs.iter().map(|d| d.record).collect::<Vec<_>>(), [0, 1]);
    assert!(matches!(
        read_documents_with_ids(&p, InputFormat::Text, &TextOptions::default(), Some("id")),
        Err(Error::InvalidParameter { .. })
    ));
}

/// A CSV quote that never closes would make the rest of the file one field: it is an error at
/// the line where the quote opened, wherever it is (a data record, the header, a TSV), while
/// quoted fields that close — across lines, with doubled quotes, at the end of the file — are
/// read as before.
#[test]
fn an_unclosed_csv_quote_is_an_error_at_the_line_where_it_opened() {
    let cases: [(&str, &str, usize); 5] = [
        (
            "q1.csv",
            "id,text\n1,fine\n2,\"opens here\n3,swallowed\n4,too\n",
            3,
        ),
        ("q2.csv", "id,text\n1,fine\n\"2,one field\n3,x\n", 3),
        (
            "q3.csv",
            "id,text\n1,\"a \"\"quoted\"\" word\nand more\n2,x\n",
            2,
        ),
        ("q4.csv", "id,\"text\n1,x\n", 1),
        ("q5.tsv", "id\ttext\n1\tfine\n2\t\"open\n", 3),
    ];
    for (name, body, line) in cases {
        let p = write(name, body);
        let f = InputFormat::from_path(&p).unwrap();
        let e = read_documents(&p, f, &TextOptions::default()).unwrap_err();
        let (at, reason) = parse_error_at(e, &p);
        assert_eq!(at, line, "{name}: {reason}");
        assert!(reason.contains("never closed"), "{name}: {reason}");
    }
    let p = write(
        "closed.csv",
        "id,text\n1,\"two\nlines\"\n2,\"say \"\"hi\"\"\"\n3,\"last\nat the end\"",
    );
    let (docs, _) = read_documents(&p, InputFormat::Csv, &TextOptions::default()).unwrap();
    let got: Vec<(usize, &str)> = docs.iter().map(|d| (d.line, d.text.as_str())).collect();
    assert_eq!(
        got,
        [
            (2, "two\nlines"),
            (4, "say \"hi\""),
            (5, "last\nat the end")
        ]
    );
    // Skipped like any bad line, with the earlier records kept.
    let skip = TextOptions {
        on_bad: OnBadLine::Skip,
        ..TextOptions::default()
    };
    let p = write("q1.csv", cases[0].1);
    let (docs, bad) = read_documents(&p, InputFormat::Csv, &skip).unwrap();
    assert_eq!((docs.len(), bad.count), (1, 1));
}

/// A multi-megabyte line (the bundled poems and tweets joined) is read and tokenised like the
/// reference
/// (the distinct features are counted in a hash table, not by sorting strings, so the work is
/// linear: see the `long-line` benchmark), for characters and words.
#[test]
fn very_long_lines_are_read_and_tokenised_exactly() {
    let mut all = bundled("poems");
    all.extend(bundled("tweets"));
    let line = all.join(" ").replace(['\n', '\r'], " ");
    assert!(line.len() > 1_500_000);
    let p = write("long.txt", format!("{line}\nshort\n"));
    let (docs, _) = read_documents(&p, InputFormat::Text, &TextOptions::default()).unwrap();
    assert_eq!((docs.len(), docs[0].text.len()), (2, line.len()));
    for spec in [
        Spec {
            mode: Mode::Chars,
            ngram: 2,
            ..Spec::default()
        },
        Spec {
            mode: Mode::Words,
            ngram: 3,
            ..Spec::default()
        },
    ] {
        let t = tokenizer_of(&spec);
        let f = t.features(&docs[0].text);
        let (tokens, weights) =
            text_reference::features(&spec, &RefWeighting::Tf, None, &docs[0].text);
        assert!(tokens.len() > 10_000);
        assert_eq!((f.tokens, f.weights), (tokens, weights));
    }
}

/// jieba's keyword weights against Python jieba 0.42.1's
/// `jieba.analyse.extract_tags(text, topK=5, withWeight=True)` (values pinned from it): the
/// same five keywords with the same weights, ties kept by first occurrence as Python's stable
/// sort keeps them (the poem: five words tie at the median IDF, a sixth follows).
#[cfg(feature = "cjk")]
#[test]
fn jieba_keywords_are_the_keywords_and_weights_of_python_jieba() {
    let poem = "道吾當年不肯道，漸源中路沒商量。\n先師靈骨今猶在，無用扶鍬上法堂。";
    let cases: [(&str, [(&str, f64); 5]); 3] = [
        (
            "今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。后天纽约的天气不好，昨天纽约的天气也不好，北京烤鸭真好吃",
            [
                ("北京烤鸭", 1.25143832909),
                ("纽约", 1.0095837162795),
                ("天气", 0.9689915916884999),
                ("张尧", 0.597738375145),
                ("不好", 0.567116653301),
            ],
        ),
        (
            "此外，公司拟对全资子公司吉林欧亚置业有限公司增资4.3亿元，增资后，吉林欧亚置业注册资本由7000万元增加到5亿元。吉林欧亚置业主要经营范围为房地产开发及百货零售等业务。目前在建吉林欧亚城市商业综合体项目。2013年，实现营业收入0万元，实现净利润-139.13万元。",
            [
                ("欧亚", 0.7300142700289363),
                ("吉林", 0.659038184373617),
                ("置业", 0.4887134522112766),
                ("万元", 0.3392722481859574),
                ("增资", 0.33582401985234045),
            ],
        ),
        (
            poem,
            [
                ("當年", 1.3283075003222222),
                ("漸源", 1.3283075003222222),
                ("先師", 1.3283075003222222),
                ("靈骨", 1.3283075003222222),
                ("無用", 1.3283075003222222),
            ],
        ),
    ];
    let t = tok(Tokenizer::builder()
        .mode(Mode::Cjk)
        .weighting(Weighting::JiebaKeywords)
        .top_k(Some(5)));
    for (text, python) in cases {
        let f = t.features(text);
        let mut got: Vec<(String, f32)> = f.tokens.into_iter().zip(f.weights).collect();
        let mut want: Vec<(String, f32)> = python
            .iter()
            .map(|&(w, x)| (w.to_string(), x as f32))
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got.len(), 5);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.0, w.0, "{text}");
            assert!(
                (g.1 - w.1).abs() <= 1e-6 * w.1,
                "{}: {} vs {}",
                g.0,
                g.1,
                w.1
            );
        }
    }
    // Without top K: every keyword, single characters dropped (the poem's 道, 沒, 上, …).
    let all = tok(t.to_builder().top_k(None));
    let f = all.features(poem);
    assert_eq!(
        f.tokens,
        [
            "當年", "不肯", "漸源", "中路", "商量", "先師", "靈骨", "無用", "法堂"
        ]
    );
    // Only jieba's words can be its keywords.
    for b in [
        Tokenizer::builder().mode(Mode::Words),
        Tokenizer::builder().mode(Mode::Cjk).ngram(2),
    ] {
        assert!(matches!(
            b.weighting(Weighting::JiebaKeywords).build(),
            Err(Error::InvalidParameter {
                name: "weighting",
                ..
            })
        ));
    }
}

/// Built without the `cjk` feature, the jieba modes and weights are refused, not guessed.
#[cfg(not(feature = "cjk"))]
#[test]
fn without_the_cjk_feature_jieba_is_refused() {
    for b in [
        Tokenizer::builder().mode(Mode::Cjk),
        Tokenizer::builder().mode(Mode::Auto),
    ] {
        assert!(matches!(b.build(), Err(Error::Unsupported(_))));
    }
    let b = Tokenizer::builder()
        .mode(Mode::Cjk)
        .weighting(Weighting::JiebaKeywords);
    assert!(matches!(b.build(), Err(Error::Unsupported(_))));
}

/// A corpus tokenised once ([`Tokenizer::count_corpus`]) gives the IDF table of `Idf::fit` and,
/// weighed by the fitted tokenizer, the rows of `feature_rows` (the two-pass way), bit for bit:
/// words and character n-grams, TF-IDF, TF and binary weights, with and without top K, a
/// document longer than the streaming chunk, empty documents, and at 1 and 3 threads.
#[test]
fn a_corpus_counted_once_gives_the_rows_of_two_passes() {
    let tweets = bundled("tweets");
    let poems = bundled("poems");
    let mut docs: Vec<String> = tweets[..1500].to_vec();
    docs.extend(poems[..700].iter().cloned());
    // Longer than the 4 KiB chunk, so counted by the streaming pass.
    docs.push(tweets[..200].join(" "));
    docs.push(String::new());
    docs.push("   ".into());
    let base = [
        Tokenizer::builder().stop_words(StopWords::english()),
        Tokenizer::builder().mode(Mode::Chars).ngram(2),
        Tokenizer::builder().ngram(2).lowercase(false),
    ];
    let pool = |n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    for b in base {
        let counting = tok(b.clone());
        let (idf, corpus) = pool(1).install(|| counting.count_corpus(&docs)).unwrap();
        assert_eq!(corpus.len(), docs.len());
        assert_eq!(idf.entries(), Idf::fit(&counting, &docs).entries());
        let idf = std::sync::Arc::new(idf);
        for (weighting, top_k) in [
            (Weighting::TfIdf(idf.clone()), None),
            (Weighting::TfIdf(idf.clone()), Some(7)),
            (Weighting::Tf, Some(3)),
            (Weighting::Binary, None),
        ] {
            let t = tok(b.clone().weighting(weighting).top_k(top_k));
            let want = t.feature_rows(&docs);
            for threads in [1, 3] {
                let (_, corpus) = pool(threads)
                    .install(|| counting.count_corpus(&docs))
                    .unwrap();
                let got = pool(threads).install(|| corpus.feature_rows(&t)).unwrap();
                assert_eq!(got, want, "{} top {top_k:?}, {threads} threads", t.config());
            }
        }
    }
    // Another tokenisation: refused, naming both.
    let (_, corpus) = tok(Tokenizer::builder()).count_corpus(&docs[..10]).unwrap();
    let err = corpus
        .feature_rows(&tok(Tokenizer::builder().ngram(2)))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidParameter { .. }), "{err}");
    assert!(err.to_string().contains("ngram=2"), "{err}");
}
