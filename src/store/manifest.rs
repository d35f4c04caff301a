//! The manifest (`manifest.simlsh`, kind [`FileKind::Store`]): the store's configuration
//! with its text model written out (tokenizer options, stop words, the IDF table: never a
//! path), the log position it reflects, its segments and their dead rows. Replaced
//! atomically by each checkpoint.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use roaring::RoaringBitmap;

use super::Config;
use super::rows::Content;
use crate::error::{Error, Result};
use crate::index::IndexSpec;
use crate::persist::{FileKind, IndexFile, Writer};
use crate::signers::SignerSpec;
use crate::text::{Idf, Mode, StopWords, Tokenizer, Weighting};

/// The manifest's file name.
pub(crate) const NAME: &str = "manifest.simlsh";

/// The manifest's path.
pub(crate) fn path(dir: &Path) -> PathBuf {
    dir.join(NAME)
}

/// What a manifest records besides the configuration.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// The last log record the segments reflect.
    pub(crate) lsn: u64,
    /// The next segment number to use.
    pub(crate) next_segment: u64,
    /// Segments, oldest first, with their dead rows.
    pub(crate) segments: Vec<(u64, Arc<RoaringBitmap>)>,
}

fn mode_name(m: Mode) -> String {
    format!("{m:?}").to_lowercase()
}

/// Writes the manifest atomically.
pub(crate) fn write(dir: &Path, config: &Config, state: &State) -> Result<()> {
    let mut w = Writer::new(FileKind::Store);
    w.param("part", "manifest")?
        .param("bits", config.bits)?
        .param("content", config.content.name())?
        .param("index", config.index.to_string())?
        .param("recall", config.recall)?
        .param("delta_limit", config.delta_limit)?
        .param("lsn", state.lsn)?
        .param("next_segment", state.next_segment)?;
    if let Content::Vectors { dim } = config.content {
        w.param("dim", dim)?;
    }
    if let Some(s) = &config.signer {
        for (k, v) in s.to_params() {
            w.param(&k, v)?;
        }
    }
    let nos: Vec<u64> = state.segments.iter().map(|s| s.0).collect();
    let mut offsets = vec![0u64];
    let mut dead: Vec<u32> = Vec::new();
    for (_, d) in &state.segments {
        dead.extend(d.iter());
        offsets.push(dead.len() as u64);
    }
    w.u64s("segments", &nos)?
        .u64s("dead_offsets", &offsets)?
        .u32s("dead", &dead)?;
    let stop: Vec<u8>;
    let idf_keys: Vec<u64>;
    let idf_dfs: Vec<u32>;
    if let Some(t) = &config.tokenizer {
        let b = t.to_builder();
        w.param("text.mode", mode_name(b.mode))?
            .param("text.ngram", b.ngram)?
            .param("text.lowercase", u8::from(b.lowercase))?
            .param("text.keep_punctuation", u8::from(b.keep_punctuation))?
            .param("text.hmm", u8::from(b.hmm))?;
        if let Some(k) = b.top_k {
            w.param("text.top_k", k)?;
        }
        let weighting = match &b.weighting {
            Weighting::Binary => "binary",
            Weighting::Tf => "tf",
            Weighting::TfIdf(_) => "tfidf",
            Weighting::JiebaKeywords => "jieba",
        };
        w.param("text.weighting", weighting)?;
        stop = b.stop_words.words().join("\n").into_bytes();
        w.param("text.stop_words", b.stop_words.len())?;
        w.u8s("stop_words", &stop)?;
        if let Weighting::TfIdf(idf) = &b.weighting {
            idf_keys = idf.entries().iter().map(|e| e.0).collect();
            idf_dfs = idf.entries().iter().map(|e| e.1).collect();
            w.param("idf.docs", idf.docs())?
                .param("idf.config", idf.config())?;
            w.u64s("idf_keys", &idf_keys)?.u32s("idf_dfs", &idf_dfs)?;
        }
    }
    w.write(&path(dir))
}

/// Reads the manifest of `dir`, verifying its checksum.
pub(crate) fn read(dir: &Path) -> Result<(Config, State)> {
    let f = IndexFile::open(&path(dir))?;
    f.expect_kind(FileKind::Store)?;
    f.verify()?;
    if f.param_opt("part") != Some("manifest") {
        return Err(f.field_error("param part", "not a store manifest"));
    }
    let bits: usize = f.param("bits")?;
    crate::index::check_bits(bits).map_err(|e| f.field_error("param bits", e.to_string()))?;
    let content = match f.param_opt("content").unwrap_or("") {
        "codes" => Content::Codes,
        "vectors" => Content::Vectors {
            dim: f.param("dim")?,
        },
        "text" => Content::Text,
        other => {
            return Err(f.field_error("param content", format!("unknown content `{other}`")));
        }
    };
    let index: IndexSpec = f
        .param::<String>("index")?
        .parse()
        .map_err(|e: Error| f.field_error("param index", e.to_string()))?;
    let signer = if content.has_cosine() {
        Some(
            SignerSpec::from_params(f.params())
                .map_err(|e| f.field_error("param signer", e.to_string()))?,
        )
    } else {
        None
    };
    let tokenizer = if content == Content::Text {
        Some(read_tokenizer(&f)?)
    } else {
        None
    };
    let config = Config {
        bits,
        content,
        index,
        recall: f.param("recall")?,
        signer,
        tokenizer,
        delta_limit: f.param("delta_limit")?,
    };
    let nos = f.u64s("segments")?;
    let offsets = f.u64s("dead_offsets")?;
    let dead = f.u32s("dead")?;
    if offsets.len() != nos.len() + 1
        || offsets[0] != 0
        || offsets.windows(2).any(|p| p[0] > p[1])
        || offsets[nos.len()] != dead.len() as u64
    {
        return Err(f.field_error("section dead_offsets", "inconsistent with the segments"));
    }
    let segments = nos
        .iter()
        .enumerate()
        .map(|(i, &no)| {
            let d = &dead[offsets[i] as usize..offsets[i + 1] as usize];
            (no, Arc::new(d.iter().copied().collect::<RoaringBitmap>()))
        })
        .collect();
    let state = State {
        lsn: f.param("lsn")?,
        next_segment: f.param("next_segment")?,
        segments,
    };
    Ok((config, state))
}

fn read_tokenizer(f: &IndexFile) -> Result<Tokenizer> {
    let bad = |k: &str, e: String| f.field_error(format!("param {k}"), e);
    let flag = |k: &str| -> Result<bool> {
        match f.param_opt(k) {
            Some("1") => Ok(true),
            Some("0") => Ok(false),
            v => Err(bad(k, format!("{v:?} is not 0 or 1"))),
        }
    };
    let mode: Mode = f
        .param::<String>("text.mode")?
        .parse()
        .map_err(|e: Error| bad("text.mode", e.to_string()))?;
    let stop = f.u8s("stop_words")?;
    let words =
        std::str::from_utf8(&stop).map_err(|_| f.field_error("section stop_words", "not UTF-8"))?;
    let stop_words = StopWords::from_words(words.split('\n').filter(|w| !w.is_empty()));
    let weighting = match f.param_opt("text.weighting").unwrap_or("") {
        "binary" => Weighting::Binary,
        "tf" => Weighting::Tf,
        "jieba" => Weighting::JiebaKeywords,
        "tfidf" => {
            let keys = f.u64s("idf_keys")?;
            let dfs = f.u32s("idf_dfs")?;
            if keys.len() != dfs.len() {
                return Err(f.field_error("section idf_dfs", "one per key expected"));
            }
            let idf = Idf::from_parts(
                f.param("idf.docs")?,
                keys.iter().copied().zip(dfs.iter().copied()).collect(),
                f.param("idf.config")?,
            )
            .map_err(|e| f.field_error("section idf_keys", e.to_string()))?;
            Weighting::TfIdf(Arc::new(idf))
        }
        other => {
            return Err(bad(
                "text.weighting",
                format!("unknown weighting `{other}`"),
            ));
        }
    };
    let top_k = match f.param_opt("text.top_k") {
        Some(_) => Some(f.param::<usize>("text.top_k")?),
        None => None,
    };
    Tokenizer::builder()
        .mode(mode)
        .ngram(f.param("text.ngram")?)
        .lowercase(flag("text.lowercase")?)
        .keep_punctuation(flag("text.keep_punctuation")?)
        .hmm(flag("text.hmm")?)
        .stop_words(stop_words)
        .weighting(weighting)
        .top_k(top_k)
        .build()
        .map_err(|e| f.error(format!("the recorded tokenizer does not build: {e}")))
}
