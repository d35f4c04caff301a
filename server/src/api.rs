//! The JSON API: request bodies decoded and checked against the limits, changes and
//! queries mapped onto the store, answers encoded. Every failure is an [`ApiError`] with an
//! HTTP status and a message; nothing here panics on any input (the `decoder` property test
//! feeds it arbitrary and mutated bodies).

use serde::{Deserialize, Serialize};
use simlsh::store::{CheckOutcome, Item, Match, Op, Outcome, Prepared, Store, Within};

/// An error answered as `{"error": {"status": .., "message": ..}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// What went wrong (never a token or a document's text).
    pub message: String,
    /// Seconds after which to retry (a 503).
    pub retry_after: Option<u32>,
}

impl ApiError {
    /// A 400.
    pub fn bad(message: impl Into<String>) -> Self {
        ApiError {
            status: 400,
            message: message.into(),
            retry_after: None,
        }
    }

    /// An error of any status.
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "error": {"status": self.status, "message": self.message}
        }))
        .unwrap_or_default()
    }
}

impl From<simlsh::Error> for ApiError {
    fn from(e: simlsh::Error) -> Self {
        use simlsh::Error as E;
        match &e {
            E::Busy(_) => ApiError {
                status: 503,
                message: e.to_string(),
                retry_after: Some(1),
            },
            E::Unavailable(_) => ApiError {
                status: 503,
                message: e.to_string(),
                retry_after: Some(5),
            },
            E::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull => {
                ApiError::new(507, format!("the store cannot write its log: {e}"))
            }
            E::Io { .. } | E::Format { .. } | E::Checksum { .. } | E::Version { .. } => {
                ApiError::new(500, e.to_string())
            }
            _ => ApiError::bad(e.to_string()),
        }
    }
}

/// Limits on a request.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Items, queries or changes in one request.
    pub max_batch: usize,
    /// Largest `k`.
    pub max_k: usize,
}

/// A code as JSON: `u64` words, or one hexadecimal string of 16 digits per word (word 0
/// first, each word most significant digit first).
#[derive(Debug)]
pub enum CodeJson {
    /// Words.
    Words(Vec<u64>),
    /// Hexadecimal.
    Hex(String),
}

/// Decodes an array of words or a string directly from the parser (an untagged enum would
/// first copy every code into serde's intermediate buffer).
impl<'de> Deserialize<'de> for CodeJson {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = CodeJson;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a code: an array of 64-bit words or a hexadecimal string")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CodeJson, E> {
                Ok(CodeJson::Hex(v.to_owned()))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<CodeJson, A::Error> {
                // Codes are short (a few words): no size hint is trusted beyond that.
                let mut words = Vec::with_capacity(seq.size_hint().unwrap_or(4).min(16));
                while let Some(w) = seq.next_element::<u64>()? {
                    words.push(w);
                }
                Ok(CodeJson::Words(words))
            }
        }
        d.deserialize_any(V)
    }
}

/// An item: exactly one of `code`, `vector`, `text`; `id` where the call needs one.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ItemJson {
    /// The id.
    pub id: Option<u64>,
    /// A code.
    pub code: Option<CodeJson>,
    /// A dense vector (vector stores).
    pub vector: Option<Vec<f32>>,
    /// A document (text stores).
    pub text: Option<String>,
}

/// How far: exactly one of `radius`, `cosine`, `k`.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct ReachJson {
    /// Hamming radius.
    pub radius: Option<u32>,
    /// Cosine threshold.
    pub cosine: Option<f64>,
    /// Nearest `k`.
    pub k: Option<usize>,
}

/// `POST /v1/query`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct QueryRequest {
    /// The queries.
    pub queries: Vec<ItemJson>,
    /// Hamming radius.
    pub radius: Option<u32>,
    /// Cosine threshold.
    pub cosine: Option<f64>,
    /// Nearest `k`.
    pub k: Option<usize>,
}

/// `POST /v1/check_insert`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    /// The items, each with an id.
    pub items: Vec<ItemJson>,
    /// Hamming radius.
    pub radius: Option<u32>,
    /// Cosine threshold.
    pub cosine: Option<f64>,
    /// Nearest `k` (any item among the `k` nearest is a match: with `k ≥ 1`, inserts only
    /// into an empty store; of little use, accepted for symmetry).
    pub k: Option<usize>,
}

/// A change of `POST /v1/update`: `{"insert": {...}}` or `{"remove": {"id": ..}}`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub enum ChangeJson {
    /// Insert (or replace) an item.
    #[serde(rename = "insert")]
    Insert(ItemJson),
    /// Remove an id.
    #[serde(rename = "remove")]
    Remove {
        /// The id.
        id: u64,
    },
}

/// `POST /v1/update`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct UpdateRequest {
    /// The changes, applied in order.
    pub changes: Vec<ChangeJson>,
}

/// A match as JSON.
#[derive(Serialize, Debug)]
pub struct MatchJson {
    /// Its id.
    pub id: u64,
    /// Hamming distance.
    pub distance: u32,
    /// Exact cosine, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f64>,
}

impl From<&Match> for MatchJson {
    fn from(m: &Match) -> Self {
        MatchJson {
            id: m.id,
            distance: m.distance,
            cosine: m.cosine,
        }
    }
}

fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad(format!("malformed request: {e}")))
}

fn reach(
    radius: Option<u32>,
    cosine: Option<f64>,
    k: Option<usize>,
    l: &Limits,
) -> Result<Within, ApiError> {
    match (radius, cosine, k) {
        (Some(r), None, None) => Ok(Within::Radius(r)),
        (None, Some(c), None) => {
            if !(-1.0..=1.0).contains(&c) {
                return Err(ApiError::bad(format!("cosine {c} is outside [-1, 1]")));
            }
            Ok(Within::Cosine(c))
        }
        (None, None, Some(k)) => {
            if k > l.max_k {
                return Err(ApiError::bad(format!(
                    "k = {k} exceeds the limit of {}",
                    l.max_k
                )));
            }
            Ok(Within::Nearest(k))
        }
        _ => Err(ApiError::bad(
            "give exactly one of `radius`, `cosine` and `k`",
        )),
    }
}

fn batch<T>(v: &[T], what: &str, l: &Limits) -> Result<(), ApiError> {
    if v.len() > l.max_batch {
        return Err(ApiError::new(
            413,
            format!(
                "{} {what} in one request; the limit is {}",
                v.len(),
                l.max_batch
            ),
        ));
    }
    Ok(())
}

/// The words of a hexadecimal code.
fn hex_words(s: &str) -> Result<Vec<u64>, ApiError> {
    if s.is_empty() || !s.len().is_multiple_of(16) || !s.is_ascii() {
        return Err(ApiError::bad(
            "a hexadecimal code has 16 hexadecimal digits per 64-bit word",
        ));
    }
    (0..s.len() / 16)
        .map(|i| {
            u64::from_str_radix(&s[16 * i..16 * i + 16], 16)
                .map_err(|_| ApiError::bad(format!("word {i} of the code is not hexadecimal")))
        })
        .collect()
}

/// The item's id (required) and prepared item (signed on this thread).
fn prepare(store: &Store, it: &ItemJson, i: usize, query: bool) -> Result<Prepared, ApiError> {
    let given = usize::from(it.code.is_some())
        + usize::from(it.vector.is_some())
        + usize::from(it.text.is_some());
    if given != 1 {
        return Err(ApiError::bad(format!(
            "item {i}: give exactly one of `code`, `vector` and `text`"
        )));
    }
    let words;
    let item = match (&it.code, &it.vector, &it.text) {
        (Some(CodeJson::Words(w)), _, _) => Item::Code(w),
        (Some(CodeJson::Hex(h)), _, _) => {
            words = hex_words(h).map_err(|e| ApiError::bad(format!("item {i}: {}", e.message)))?;
            Item::Code(&words)
        }
        (_, Some(v), _) => Item::Vector(v),
        (_, _, Some(t)) => Item::Text(t),
        _ => unreachable!("one of the three is given"),
    };
    let p = if query {
        store.prepare_query(item)
    } else {
        store.prepare(item)
    };
    p.map_err(|e| {
        let mut a = ApiError::from(e);
        a.message = format!("item {i}: {}", a.message);
        a
    })
}

fn id_of(it: &ItemJson, i: usize) -> Result<u64, ApiError> {
    it.id
        .ok_or_else(|| ApiError::bad(format!("item {i} has no `id`")))
}

/// Decodes and checks a query request: the prepared queries and their reach.
pub fn decode_query(
    store: &Store,
    body: &[u8],
    l: &Limits,
) -> Result<(Vec<Prepared>, Within), ApiError> {
    let r: QueryRequest = parse(body)?;
    batch(&r.queries, "queries", l)?;
    let within = reach(r.radius, r.cosine, r.k, l)?;
    let qs = r
        .queries
        .iter()
        .enumerate()
        .map(|(i, q)| prepare(store, q, i, true))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((qs, within))
}

/// Decodes and checks an update request.
pub fn decode_update(store: &Store, body: &[u8], l: &Limits) -> Result<Vec<Op>, ApiError> {
    let r: UpdateRequest = parse(body)?;
    batch(&r.changes, "changes", l)?;
    r.changes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            Ok(match c {
                ChangeJson::Insert(it) => Op::Insert {
                    id: id_of(it, i)?,
                    item: prepare(store, it, i, false)?,
                },
                ChangeJson::Remove { id } => Op::Remove { id: *id },
            })
        })
        .collect()
}

/// Decodes and checks a check-and-insert request.
pub fn decode_check(store: &Store, body: &[u8], l: &Limits) -> Result<Vec<Op>, ApiError> {
    let r: CheckRequest = parse(body)?;
    batch(&r.items, "items", l)?;
    let within = reach(r.radius, r.cosine, r.k, l)?;
    r.items
        .iter()
        .enumerate()
        .map(|(i, it)| {
            Ok(Op::InsertIfNew {
                id: id_of(it, i)?,
                item: prepare(store, it, i, false)?,
                within,
            })
        })
        .collect()
}

/// Appends a match as JSON, its keys in alphabetical order as the answers have always had
/// them: `{["cosine":..,]"distance":..,"id":..}` (the cosine as `serde_json` writes an
/// `f64`).
fn push_match(out: &mut Vec<u8>, m: &Match) {
    use std::io::Write as _;
    out.push(b'{');
    if let Some(c) = m.cosine {
        out.extend_from_slice(b"\"cosine\":");
        let _ = serde_json::to_writer(&mut *out, &c);
        out.push(b',');
    }
    let _ = write!(out, "\"distance\":{},\"id\":{}}}", m.distance, m.id);
}

/// Appends `"matches":[...]`.
fn push_matches(out: &mut Vec<u8>, ms: &[Match]) {
    out.extend_from_slice(b"\"matches\":[");
    for (i, m) in ms.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_match(out, m);
    }
    out.push(b']');
}

/// The answer to a query request: `{"results":[{"matches":[...]},...]}`, written directly
/// (a batch of 1,000 answers without building a JSON tree).
pub fn encode_query(results: &[Vec<Match>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + results.len() * 16);
    out.extend_from_slice(b"{\"results\":[");
    for (i, ms) in results.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'{');
        push_matches(&mut out, ms);
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    out
}

/// The answer to an update or check-and-insert request: `{"results":[...]}` with one
/// object per change (`{"inserted":true,"replaced":..}`, `{"removed":..}` or
/// `{"inserted":..,"matches":[...]}`), written directly.
pub fn encode_outcomes(outcomes: &[Outcome]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + outcomes.len() * 32);
    out.extend_from_slice(b"{\"results\":[");
    for (i, o) in outcomes.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match o {
            Outcome::Inserted { replaced } => {
                out.extend_from_slice(if *replaced {
                    &b"{\"inserted\":true,\"replaced\":true}"[..]
                } else {
                    &b"{\"inserted\":true,\"replaced\":false}"[..]
                });
            }
            Outcome::Removed { found } => {
                out.extend_from_slice(if *found {
                    &b"{\"removed\":true}"[..]
                } else {
                    &b"{\"removed\":false}"[..]
                });
            }
            Outcome::Checked(CheckOutcome { inserted, matches }) => {
                out.extend_from_slice(if *inserted {
                    &b"{\"inserted\":true,"[..]
                } else {
                    &b"{\"inserted\":false,"[..]
                });
                push_matches(&mut out, matches);
                out.push(b'}');
            }
        }
    }
    out.extend_from_slice(b"]}");
    out
}

/// The answer to `GET /v1/items/{id}`.
pub fn encode_record(r: &simlsh::store::Record) -> Vec<u8> {
    let hex: String = r.code.iter().map(|w| format!("{w:016x}")).collect();
    let mut v = serde_json::json!({ "id": r.id, "code": r.code, "code_hex": hex });
    match &r.payload {
        simlsh::store::Payload::None => {}
        simlsh::store::Payload::Dense(x) => v["vector"] = serde_json::json!(x),
        simlsh::store::Payload::Sparse(k, w) => {
            v["features"] = serde_json::json!({ "keys": k, "weights": w })
        }
    }
    serde_json::to_vec(&v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answers as the JSON tree gave them before they were written directly.
    fn tree_outcomes(outcomes: &[Outcome]) -> Vec<u8> {
        let results: Vec<serde_json::Value> = outcomes
            .iter()
            .map(|o| match o {
                Outcome::Inserted { replaced } => {
                    serde_json::json!({ "inserted": true, "replaced": replaced })
                }
                Outcome::Removed { found } => serde_json::json!({ "removed": found }),
                Outcome::Checked(CheckOutcome { inserted, matches }) => serde_json::json!({
                    "inserted": inserted,
                    "matches": matches.iter().map(MatchJson::from).collect::<Vec<_>>(),
                }),
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({ "results": results })).unwrap()
    }

    fn tree_query(results: &[Vec<Match>]) -> Vec<u8> {
        let r: Vec<serde_json::Value> = results
            .iter()
            .map(|m| serde_json::json!({ "matches": m.iter().map(MatchJson::from).collect::<Vec<_>>() }))
            .collect();
        serde_json::to_vec(&serde_json::json!({ "results": r })).unwrap()
    }

    #[test]
    fn direct_answers_are_the_json_trees_bytes() {
        let m = |id, distance, cosine| Match {
            id,
            distance,
            cosine,
        };
        let matches = vec![
            m(u64::MAX, 3, None),
            m(0, 0, Some(1.0)),
            m(7, 12, Some(0.1 + 0.2)),
            m(8, 1, Some(-1e-300)),
            m(9, 2, Some(f64::NAN)),
            m(10, 2, Some(0.8000000000000002)),
        ];
        let outcomes = [
            Outcome::Inserted { replaced: false },
            Outcome::Inserted { replaced: true },
            Outcome::Removed { found: false },
            Outcome::Removed { found: true },
            Outcome::Checked(CheckOutcome {
                inserted: true,
                matches: Vec::new(),
            }),
            Outcome::Checked(CheckOutcome {
                inserted: false,
                matches: matches.clone(),
            }),
        ];
        for k in 0..=outcomes.len() {
            assert_eq!(
                String::from_utf8(encode_outcomes(&outcomes[..k])).unwrap(),
                String::from_utf8(tree_outcomes(&outcomes[..k])).unwrap()
            );
        }
        let results = [Vec::new(), matches.clone(), matches[..1].to_vec()];
        for k in 0..=results.len() {
            assert_eq!(
                String::from_utf8(encode_query(&results[..k])).unwrap(),
                String::from_utf8(tree_query(&results[..k])).unwrap()
            );
        }
    }
}
