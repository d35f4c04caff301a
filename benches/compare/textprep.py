"""Text preparation and exact ground truth for the real-data near-duplicate tasks.

Used by realdata.py and scale.py. Everything here is deterministic: the same input gives the
same documents, TF-IDF matrix and truth pairs on every machine.

* Tokens: the command line's own tokenizer, through the Python package (`simlsh.Tokenizer`),
  so that the truth's vectors are exactly those `simlsh dedup` verifies with:
  - English (health-news tweets): URLs removed (the short-link slugs are random per post),
    whitespace collapsed, then `--mode words` (lower-cased UAX #29 words with a letter or
    digit);
  - Chinese (poems): whitespace collapsed, then `--mode chars --ngram 2` (character bigrams of
    the whole text; a bigram without a letter or digit is dropped).
  The earlier regex tokens (``\\w+`` words, bigrams inside runs of word characters) are kept
  as `tokenize_en` / `tokenize_zh` for reference only.
* Exact duplicates (identical token sequences) are collapsed to their first occurrence;
  documents with no token are dropped.
* TF-IDF: scikit-learn ``TfidfVectorizer`` on the token lists (smooth IDF, raw TF,
  l2-normalised rows), CSR float32: the weights of the command line's TF-IDF
  (``ln((1 + N) / (1 + df)) + 1`` times the count), up to the row scale, which a cosine ignores.
* Truth: every pair i < j whose exact cosine is >= tau, by a sparse self-product in row
  blocks. Ubiquitous features would make that product dense, so the features are split
  into frequent (F) and rare (R): cos = x_R.y_R + x_F.y_F. A pair that shares no rare
  feature has cos = x_F.y_F <= |x_F||y_F|, so it can reach tau only if both documents
  have |x_F| >= tau; those few documents are joined by brute force. Every other pair is
  found through the rare product and its exact cosine (rare + frequent parts) is then
  computed. The result is exact (checked against a dense X.X^T in --smoke).
"""

import csv
import gzip
import io
import json
import re

import numpy as np

URL = re.compile(r"https?://\S+")
WORD = re.compile(r"\w+")
SPACE = re.compile(r"\s+")


def _open_text(path):
    if str(path).endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def load_texts(path, field="text", limit=None):
    """Texts of a CSV (with a header) or JSON Lines file, optionally gzip'd."""
    out = []
    with _open_text(path) as fh:
        if ".csv" in str(path):
            rows = csv.DictReader(fh)
            for r in rows:
                out.append(r[field])
                if limit and len(out) >= limit:
                    break
        else:
            for line in fh:
                if line.strip():
                    out.append(json.loads(line)[field])
                    if limit and len(out) >= limit:
                        break
    return out


def tokenize_en(text):
    """URLs removed, lower-cased Unicode words."""
    return WORD.findall(URL.sub(" ", text).lower())


def tokenize_zh(text):
    """Character bigrams within runs of word characters (unigram for a 1-char run)."""
    toks = []
    for run in WORD.findall(text):
        if len(run) == 1:
            toks.append(run)
        else:
            toks.extend(run[i : i + 2] for i in range(len(run) - 1))
    return toks


def normalise_en(text):
    """The text handed to simlsh's own tokenizer: URLs removed, one line."""
    return SPACE.sub(" ", URL.sub(" ", text)).strip()


def normalise_zh(text):
    """The text handed to simlsh's own tokenizer: one line (line breaks -> spaces)."""
    return SPACE.sub(" ", text).strip()


# The command line's text options of each language (and the same tokenizer in Python).
CLI_TEXT = {"en": ["--mode", "words"], "zh": ["--mode", "chars", "--ngram", "2"]}


def library_tokenize(lang):
    """The tokens `simlsh dedup FILE <CLI_TEXT[lang]>` computes for a line, in order, repeats
    included (the Python package runs the same Rust tokenizer)."""
    import simlsh

    tok = simlsh.Tokenizer(mode="words") if lang == "en" else simlsh.Tokenizer(mode="chars", ngram=2)
    return tok.tokens


def collapse(texts, tokenize, normalise):
    """Normalise each text into the line handed to the command line, tokenise that line, drop
    empty documents, collapse identical token sequences.

    Returns (tokens, lines, kept, n_duplicates, n_empty): tokens and lines of the kept
    documents, kept = their indices in texts."""
    seen = set()
    toks, lines, kept = [], [], []
    n_dup = n_empty = 0
    for i, t in enumerate(texts):
        line = normalise(t)
        tk = tokenize(line)
        if not tk:
            n_empty += 1
            continue
        key = "\x1f".join(tk)
        if key in seen:
            n_dup += 1
            continue
        seen.add(key)
        toks.append(tk)
        lines.append(line)
        kept.append(i)
    return toks, lines, np.asarray(kept, dtype=np.int64), n_dup, n_empty


def tfidf(tokens):
    """CSR float32 TF-IDF (l2 rows) and the feature names (column order)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(analyzer=_identity, dtype=np.float32)
    x = vec.fit_transform(tokens).tocsr()
    x.sort_indices()
    return x, vec.get_feature_names_out()


def _identity(tokens):
    return tokens


def _row_norms(x):
    return np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())


def truth_pairs(x, tau, block_nnz=2.0e7):
    """All pairs i < j with exact cosine >= tau. Returns (i, j, cos) arrays, sorted by (i, j),
    and a dict describing the split (for the report)."""
    x = x.astype(np.float64).tocsr()
    n, d = x.shape
    df = np.bincount(x.indices, minlength=d).astype(np.int64)
    best = None
    for frac in (0, 1000, 500, 200, 100, 50, 20, 10):
        cut = n + 1 if frac == 0 else max(2, n // frac)
        freq = df > cut
        if freq.sum() > 400:
            continue
        nf = _row_norms(x[:, freq]) if freq.any() else np.zeros(n)
        h = int((nf >= tau).sum())
        cost = float((df[~freq] ** 2).sum()) + float(h) * h
        if best is None or cost < best[0]:
            best = (cost, cut, freq, nf)
    _, cut, freq, nf = best
    xr = x[:, ~freq].tocsr()
    xrt = xr.T.tocsr()
    xf = x[:, freq].toarray()
    rare_nnz_per_row = max(1.0, float((df[~freq] ** 2).sum()) / n)
    block = int(min(n, max(64, block_nnz / rare_nnz_per_row)))
    ii, jj, cc = [], [], []
    for b0 in range(0, n, block):
        b1 = min(n, b0 + block)
        p = (xr[b0:b1] @ xrt).tocoo()
        r = p.row.astype(np.int64) + b0
        c = p.col.astype(np.int64)
        v = p.data
        m = c > r
        r, c, v = r[m], c[m], v[m]
        m = v + nf[r] * nf[c] >= tau
        r, c, v = r[m], c[m], v[m]
        cos = v + np.einsum("ij,ij->i", xf[r], xf[c])
        m = cos >= tau
        ii.append(r[m])
        jj.append(c[m])
        cc.append(cos[m])
    hot = np.flatnonzero(nf >= tau)
    if len(hot) > 1:
        xh = x[hot]
        g = (xh @ xh.T).toarray()
        a, b = np.nonzero(np.triu(g >= tau, k=1))
        ii.append(hot[a])
        jj.append(hot[b])
        cc.append(g[a, b])
    i = np.concatenate(ii) if ii else np.zeros(0, np.int64)
    j = np.concatenate(jj) if jj else np.zeros(0, np.int64)
    c = np.concatenate(cc) if cc else np.zeros(0)
    key, first = np.unique(i * n + j, return_index=True)
    info = {"frequent_features": int(freq.sum()), "df_cut": int(cut), "hot_docs": int(len(hot)), "row_block": block}
    return key // n, key % n, c[first], info


def truth_pairs_dense(x, tau):
    """The same pairs by a dense X.X^T (small inputs only): the oracle of the smoke run."""
    g = (x.astype(np.float64) @ x.astype(np.float64).T).toarray()
    a, b = np.nonzero(np.triu(g >= tau, k=1))
    return a.astype(np.int64), b.astype(np.int64), g[a, b]
