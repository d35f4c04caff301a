//! Text signing, one thread: tokenise, weight and sign in one pass.
//!
//! - `song/…`: the 254,248 Song poems of `../shared/datasets/chinese-poetry-tang-song/`
//!   (field `text`; the bundled 3,500 poems when that file is absent, or the JSON Lines file
//!   named by `SIMLSH_TEXT_BENCH_FILE`, gzipped or not): character bigrams (`Mode::Chars`,
//!   `ngram(2)`) with TF-IDF at f = 256, signed by the hashed Gaussian signer (the command
//!   line's default for text, `chars2/sign/hashed-gaussian`) and by the hashing trick
//!   (`chars2/sign/hashing-trick`), throughput in bigrams; the IDF pass over the same tokens
//!   (`chars2/idf`); jieba words (`Mode::Cjk`) with TF-IDF (`cjk/sign/…`, throughput in
//!   words) and with jieba's own keyword weights (`jieba/sign/…`, `Weighting::JiebaKeywords`,
//!   the command line's `--weighting jieba`), f = 256, hashed Gaussian.
//! - `long-line/…`: one document made of the first poems joined into a single line of
//!   growing length, character bigrams, TF at f = 64: the time per character stays flat.
//!
//! `cargo bench --bench text` (filter with e.g. `-- song/chars2`).

use std::io::Read;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
#[path = "common/pool.rs"]
mod pool;
use pool::pool;
use simlsh::HashingTrick;
use simlsh::signers::{AnySigner, HashedGaussian};
use simlsh::text::{Idf, Mode, Tokenizer, Weighting};
use std::hint::black_box;

fn corpus_path() -> PathBuf {
    if let Some(p) = std::env::var_os("SIMLSH_TEXT_BENCH_FILE") {
        return p.into();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let song = root.join("../shared/datasets/chinese-poetry-tang-song/poet.song.jsonl.gz");
    if song.exists() {
        song
    } else {
        root.join("datasets/chinese-poetry-3k/poems.jsonl")
    }
}

/// The `text` field of every line of a JSON Lines file, gzipped or not.
fn poems(path: &Path) -> Vec<String> {
    let raw = std::fs::read(path).unwrap();
    let mut text = String::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_string(&mut text)
            .unwrap();
    } else {
        text = String::from_utf8(raw).unwrap();
    }
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["text"].as_str().unwrap().to_string()
        })
        .collect()
}

fn bench_song(c: &mut Criterion) {
    let path = corpus_path();
    let docs = poems(&path);
    eprintln!("{}: {} documents", path.display(), docs.len());
    let hg: AnySigner = HashedGaussian::builder()
        .bits(256)
        .seed(1)
        .build()
        .unwrap()
        .into();
    let ht: AnySigner = HashingTrick::builder()
        .bits(256)
        .seed(1)
        .build()
        .unwrap()
        .into();
    let mut g = c.benchmark_group("song");
    g.sample_size(10);
    for (name, mode, n) in [("chars2", Mode::Chars, 2), ("cjk", Mode::Cjk, 1)] {
        let plain = Tokenizer::builder().mode(mode).ngram(n).build().unwrap();
        let tokens: usize = docs.iter().map(|d| plain.tokens(d).len()).sum();
        g.throughput(Throughput::Elements(tokens as u64));
        if name == "chars2" {
            g.bench_function(format!("{name}/idf"), |b| {
                b.iter(|| pool().install(|| black_box(Idf::fit(&plain, &docs))))
            });
        }
        let idf = pool().install(|| Idf::fit(&plain, &docs));
        let tok = plain.to_builder().idf(idf).build().unwrap();
        let signers: &[(&str, &AnySigner)] = if name == "chars2" {
            &[("hashed-gaussian", &hg), ("hashing-trick", &ht)]
        } else {
            &[("hashed-gaussian", &hg)]
        };
        for (s, signer) in signers {
            g.bench_function(format!("{name}/sign/{s}"), |b| {
                b.iter(|| pool().install(|| black_box(tok.sign_corpus(*signer, &docs).unwrap())))
            });
        }
        if mode == Mode::Cjk {
            let jieba = plain
                .to_builder()
                .weighting(Weighting::JiebaKeywords)
                .build()
                .unwrap();
            g.bench_function("jieba/sign/hashed-gaussian", |b| {
                b.iter(|| pool().install(|| black_box(jieba.sign_corpus(&hg, &docs).unwrap())))
            });
        }
    }
    g.finish();
}

fn bench_long_line(c: &mut Criterion) {
    let docs = poems(&corpus_path());
    let signer = HashingTrick::builder().bits(64).seed(1).build().unwrap();
    let tok = Tokenizer::builder()
        .mode(Mode::Chars)
        .ngram(2)
        .build()
        .unwrap();
    let mut g = c.benchmark_group("long-line");
    g.sample_size(10);
    let line: String = docs
        .iter()
        .flat_map(|d| d.chars())
        .take(1_600_000)
        .collect();
    for chars in [100_000usize, 400_000, 1_600_000] {
        let doc: String = line.chars().take(chars).collect();
        g.throughput(Throughput::Elements(chars as u64));
        g.bench_function(format!("chars2/{chars}"), |b| {
            b.iter(|| pool().install(|| black_box(tok.sign_corpus(&signer, &[&doc]).unwrap())))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_song, bench_long_line);
criterion_main!(benches);
