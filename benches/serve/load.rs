//! Load generator for `simlsh serve`: `clients` keep-alive connections on loopback, each
//! sending requests back to back for `seconds`, with latencies recorded per request.
//!
//! ```text
//! cargo run --release -p simlsh-server --example load -- \
//!     --addr 127.0.0.1:7700 --mode check --clients 64 --seconds 10 --bits 64 --radius 3
//! ```
//!
//! Modes: `check` (one code per POST /v1/check_insert), `check-batch` (`--batch` codes per
//! check-and-insert), `insert-batch` (`--batch` codes per POST /v1/update), `query` and
//! `query-batch` (POST /v1/query), `text` (`--batch` documents of `--docs FILE`, one per line,
//! per check-and-insert with `--cosine`; with `--synth`, documents of 8 to 20 words drawn at
//! random from their vocabulary instead, nearly all new). Codes are random (`--bits` wide, a `--dup` share
//! of them within distance 2 of an earlier code of the same client).
//! With `--acks FILE` every acknowledged insert's id is appended to FILE (flushed) and every
//! sent one to FILE.sent, for the crash test. Ids are `seed << 48 | client << 40 | n`. Prints one JSON line: requests, items,
//! rates, p50/p90/p99/max latency, statuses.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Opts {
    addr: String,
    mode: String,
    clients: usize,
    seconds: f64,
    bits: usize,
    radius: u32,
    cosine: f64,
    batch: usize,
    dup: f64,
    seed: u64,
    docs: Option<String>,
    acks: Option<String>,
    token: Option<String>,
    max_requests: u64,
    synth: bool,
}

fn opts() -> Opts {
    let mut o = Opts {
        addr: simlsh::store::DEFAULT_LISTEN.to_string(),
        mode: "check".into(),
        clients: 64,
        seconds: 10.0,
        bits: 64,
        radius: 3,
        cosine: 0.8,
        batch: 1000,
        dup: 0.1,
        seed: 1,
        docs: None,
        acks: None,
        token: std::env::var("SIMLSH_TOKEN").ok(),
        max_requests: u64::MAX,
        synth: false,
    };
    let a: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < a.len() {
        let v = a.get(i + 1).cloned().unwrap_or_default();
        match a[i].as_str() {
            "--addr" => o.addr = v,
            "--mode" => o.mode = v,
            "--clients" => o.clients = v.parse().expect("--clients N"),
            "--seconds" => o.seconds = v.parse().expect("--seconds S"),
            "--bits" => o.bits = v.parse().expect("--bits N"),
            "--radius" => o.radius = v.parse().expect("--radius R"),
            "--cosine" => o.cosine = v.parse().expect("--cosine T"),
            "--batch" => o.batch = v.parse().expect("--batch N"),
            "--dup" => o.dup = v.parse().expect("--dup P"),
            "--seed" => o.seed = v.parse().expect("--seed S"),
            "--docs" => o.docs = Some(v),
            "--acks" => o.acks = Some(v),
            "--max-requests" => o.max_requests = v.parse().expect("--max-requests N"),
            "--synth" => {
                o.synth = true;
                i += 1;
                continue;
            }
            other => panic!("unknown option {other}"),
        }
        i += 2;
    }
    o
}

/// SplitMix64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Conn {
    r: BufReader<TcpStream>,
    addr: String,
}

impl Conn {
    fn new(addr: &str) -> std::io::Result<Conn> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Conn {
            r: BufReader::new(s),
            addr: addr.to_string(),
        })
    }

    /// Sends a POST and reads the answer: status and body.
    fn post(
        &mut self,
        path: &str,
        body: &[u8],
        token: Option<&str>,
    ) -> std::io::Result<(u16, Vec<u8>)> {
        let auth = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{auth}\r\n",
            self.addr,
            body.len()
        );
        let mut msg = head.into_bytes();
        msg.extend_from_slice(body);
        self.r.get_mut().write_all(&msg)?;
        let mut line = String::new();
        if self.r.read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "closed",
            ));
        }
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut len = 0;
        loop {
            let mut h = String::new();
            self.r.read_line(&mut h)?;
            if h == "\r\n" || h.is_empty() {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut b = vec![0; len];
        self.r.read_exact(&mut b)?;
        Ok((status, b))
    }
}

fn code_json(words: &[u64]) -> String {
    let w: Vec<String> = words.iter().map(|x| x.to_string()).collect();
    format!("[{}]", w.join(","))
}

struct Out {
    lat: Vec<u32>,
    items: u64,
    statuses: std::collections::BTreeMap<u16, u64>,
    errors: u64,
}

fn main() {
    let o = Arc::new(opts());
    let docs: Arc<Vec<String>> = Arc::new(match &o.docs {
        Some(p) => std::fs::read_to_string(p)
            .expect("reading --docs")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::to_string(l).expect("a JSON string"))
            .collect(),
        None => Vec::new(),
    });
    // Words of the documents (letters and digits only), for --synth.
    let vocab: Arc<Vec<String>> = Arc::new(match &o.docs {
        Some(p) => std::fs::read_to_string(p)
            .expect("reading --docs")
            .split_whitespace()
            .filter(|w| w.chars().all(char::is_alphanumeric))
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    });
    let acks = o.acks.as_ref().map(|p| {
        let f = |p: &str| {
            Arc::new(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .expect("opening the ack file"),
            ))
        };
        (f(p), f(&format!("{p}.sent")))
    });
    let words = o.bits.div_ceil(64);
    let mask = if o.bits.is_multiple_of(64) {
        u64::MAX
    } else {
        (1u64 << (o.bits % 64)) - 1
    };
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(o.seconds);
    let threads: Vec<_> = (0..o.clients)
        .map(|c| {
            let (o, docs, acks) = (Arc::clone(&o), Arc::clone(&docs), acks.clone());
            let vocab = Arc::clone(&vocab);
            std::thread::spawn(move || {
                let mut out = Out {
                    lat: Vec::new(),
                    items: 0,
                    statuses: Default::default(),
                    errors: 0,
                };
                let mut rng = Rng(o.seed.wrapping_mul(1_000_003).wrapping_add(c as u64));
                let mut conn = match Conn::new(&o.addr) {
                    Ok(c) => c,
                    Err(_) => {
                        out.errors += 1;
                        return out;
                    }
                };
                let mut recent: Vec<Vec<u64>> = Vec::new();
                let mut n: u64 = 0;
                let mut doc = c * 7919;
                let mut sent_requests = 0u64;
                let make_code = |rng: &mut Rng, recent: &mut Vec<Vec<u64>>| -> Vec<u64> {
                    let mut w: Vec<u64> =
                        if !recent.is_empty() && (rng.below(1_000_000) as f64) < o.dup * 1e6 {
                            let mut w = recent[rng.below(recent.len() as u64) as usize].clone();
                            for _ in 0..2 {
                                let b = rng.below(o.bits as u64) as usize;
                                w[b / 64] ^= 1 << (b % 64);
                            }
                            w
                        } else {
                            (0..words).map(|_| rng.next()).collect()
                        };
                    w[words - 1] &= mask;
                    if recent.len() < 1024 {
                        recent.push(w.clone());
                    } else {
                        let i = rng.below(1024) as usize;
                        recent[i] = w.clone();
                    }
                    w
                };
                while Instant::now() < deadline && sent_requests < o.max_requests {
                    sent_requests += 1;
                    let per = match o.mode.as_str() {
                        "check" | "query" => 1,
                        _ => o.batch,
                    };
                    let mut ids = Vec::with_capacity(per);
                    let items: Vec<String> = (0..per)
                        .map(|_| {
                            let id = ((o.seed & 0xffff) << 48) | ((c as u64) << 40) | n;
                            n += 1;
                            ids.push(id);
                            // Queries take no id.
                            let idf = if o.mode.starts_with("query") {
                                String::new()
                            } else {
                                format!("\"id\":{id},")
                            };
                            if o.mode == "text" && o.synth {
                                // 8 to 20 words drawn from the documents' vocabulary.
                                let k = 8 + rng.below(13);
                                let words: Vec<&str> = (0..k)
                                    .map(|_| vocab[rng.below(vocab.len() as u64) as usize].as_str())
                                    .collect();
                                format!("{{{idf}\"text\":\"{}\"}}", words.join(" "))
                            } else if o.mode == "text" {
                                doc = (doc + 1) % docs.len().max(1);
                                format!("{{{idf}\"text\":{}}}", docs[doc])
                            } else {
                                let w = make_code(&mut rng, &mut recent);
                                format!("{{{idf}\"code\":{}}}", code_json(&w))
                            }
                        })
                        .collect();
                    let (path, body) = match o.mode.as_str() {
                        "check" | "check-batch" => (
                            "/v1/check_insert",
                            format!(
                                "{{\"items\":[{}],\"radius\":{}}}",
                                items.join(","),
                                o.radius
                            ),
                        ),
                        "text" => (
                            "/v1/check_insert",
                            format!(
                                "{{\"items\":[{}],\"cosine\":{}}}",
                                items.join(","),
                                o.cosine
                            ),
                        ),
                        "insert-batch" => (
                            "/v1/update",
                            format!(
                                "{{\"changes\":[{}]}}",
                                items
                                    .iter()
                                    .map(|i| format!("{{\"insert\":{i}}}"))
                                    .collect::<Vec<_>>()
                                    .join(",")
                            ),
                        ),
                        "query" | "query-batch" => (
                            "/v1/query",
                            format!(
                                "{{\"queries\":[{}],\"radius\":{}}}",
                                items.join(","),
                                o.radius
                            ),
                        ),
                        m => panic!("unknown mode {m}"),
                    };
                    if let Some((_, sent)) = &acks {
                        let mut f = sent.lock().unwrap();
                        for id in &ids {
                            let _ = writeln!(f, "{id}");
                        }
                        let _ = f.flush();
                    }
                    let t = Instant::now();
                    match conn.post(path, body.as_bytes(), o.token.as_deref()) {
                        Ok((s, b)) => {
                            out.lat
                                .push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
                            *out.statuses.entry(s).or_default() += 1;
                            if s == 200 {
                                out.items += per as u64;
                                if let Some((ack, _)) = &acks {
                                    let v: serde_json::Value =
                                        serde_json::from_slice(&b).unwrap_or_default();
                                    let mut f = ack.lock().unwrap();
                                    for (k, id) in ids.iter().enumerate() {
                                        if v["results"][k]["inserted"] == true {
                                            let _ = writeln!(f, "{id}");
                                        }
                                    }
                                    let _ = f.flush();
                                }
                            } else if s == 503 {
                                std::thread::sleep(Duration::from_millis(5));
                            }
                        }
                        Err(_) => {
                            out.errors += 1;
                            match Conn::new(&o.addr) {
                                Ok(c) => conn = c,
                                Err(_) => {
                                    std::thread::sleep(Duration::from_millis(20));
                                }
                            }
                        }
                    }
                }
                out
            })
        })
        .collect();
    let mut lat = Vec::new();
    let mut items = 0;
    let mut errors = 0;
    let mut statuses: std::collections::BTreeMap<u16, u64> = Default::default();
    for t in threads {
        let o = t.join().expect("a client thread");
        lat.extend(o.lat);
        items += o.items;
        errors += o.errors;
        for (k, v) in o.statuses {
            *statuses.entry(k).or_default() += v;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    let q = |p: f64| -> f64 {
        if lat.is_empty() {
            0.0
        } else {
            lat[((lat.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0
        }
    };
    let v = serde_json::json!({
        "mode": o.mode, "clients": o.clients, "seconds": secs, "requests": lat.len(),
        "items": items, "requests_per_s": lat.len() as f64 / secs, "items_per_s": items as f64 / secs,
        "p50_ms": q(0.5), "p90_ms": q(0.9), "p99_ms": q(0.99), "max_ms": q(1.0),
        "statuses": statuses, "connection_errors": errors,
    });
    println!("{v}");
}
