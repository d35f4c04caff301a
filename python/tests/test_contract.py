"""One contract everywhere: the same seed and parameters give the same bits and the same pairs
from the Rust library (through the command line, which is the library with files around it),
the Python package and Spark, at their defaults and at given settings: every signer kind on
dense, sparse (with duplicate entries) and text input, the deduplication of documents,
vectors and sparse rows (rows without features among them), and widths planned beyond 256
bits. A divergence between front ends is a failure here."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import simlsh
from simlsh import _simlsh

from conftest import DATA, read_fvecs, run_cli

TWEETS = DATA / "healthtweets-10k" / "healthtweets-10k.csv"
GLOVE = DATA / "glove-6B-50d-10k" / "vectors.fvecs"
KINDS = [k["name"] for k in _simlsh.signer_kinds()]
NEEDS_DIM = {k["name"] for k in _simlsh.signer_kinds() if k["needs_dim"]}
FEATURELESS = ["", "!!! ...", "🙂🙂🙂", "- -- ---"]


def tweets(n: int | None = None) -> list[str]:
    """The bundled tweets, each on one line (as a text file holds them)."""
    with open(TWEETS, newline="", encoding="utf-8") as f:
        docs = [" ".join(r["text"].split()) for r in csv.DictReader(f)]
    return docs[:n] if n else docs


def sparse_with_duplicates(n: int = 400, cols: int = 700, seed: int = 3):
    """A CSR matrix whose rows repeat columns: three entries ``1e8, 1, -1e8`` of one column sum
    to 1 in float64 and to 0 in float32, so a front end summing in float32 signs another
    vector; zero rows included."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    indptr, indices, data = [0], [], []
    for r in range(n):
        if r % 50 != 7:  # else a zero row
            k = int(rng.integers(3, 25))
            indices += rng.integers(0, cols, k).tolist()
            data += rng.standard_normal(k).tolist()
            if r % 3 == 0:
                c = int(rng.integers(0, cols))
                indices += [c, c, c]
                data += [1e8, 1.0, -1e8]
        indptr.append(len(indices))
    M = sp.csr_matrix((np.array(data, np.float32), np.array(indices), np.array(indptr)), shape=(n, cols))
    assert not M.has_canonical_format  # duplicates kept, as SciPy keeps them until summed
    return M


def cli_codes(cli, tmp_path, path, *args) -> np.ndarray:
    out = tmp_path / "codes.npy"
    run_cli(cli, "sign", path, out, *args)
    return np.load(out)


# ---------------------------------------------------------------------------------------------
# Bits.


@pytest.mark.parametrize("kind", KINDS)
def test_every_signer_gives_the_same_bits_on_dense_and_sparse_input(cli, tmp_path, kind):
    # The command line draws a very sparse matrix for a sparse input's row length unless the
    # density is given: give it, so both sign with the same matrix.
    kind = "very-sparse:density=0.05" if kind == "very-sparse" else kind
    needs_dim = kind.split(":")[0] in NEEDS_DIM
    X = read_fvecs(GLOVE)[:400]
    np.save(tmp_path / "x.npy", X)
    s = simlsh.signer(kind, bits=96, seed=5, dim=X.shape[1] if needs_dim else None)
    want = cli_codes(cli, tmp_path, tmp_path / "x.npy", "--signer", kind, "--bits", 96, "--seed", 5)
    np.testing.assert_array_equal(s.sign(X), want)
    np.testing.assert_array_equal(s.sign(X.astype(np.float64)), want)

    import scipy.sparse as sp

    M = sparse_with_duplicates()
    sp.save_npz(tmp_path / "m.npz", M, compressed=False)
    s = simlsh.signer(kind, bits=96, seed=5, dim=M.shape[1] if needs_dim else None)
    want = cli_codes(cli, tmp_path, tmp_path / "m.npz", "--signer", kind, "--bits", 96, "--seed", 5)
    np.testing.assert_array_equal(s.sign(M), want)


def test_duplicate_entries_are_summed_in_float64_everywhere(cli, tmp_path):
    """The case of the issue: a column given as 1e8, 1, -1e8 weighs 1 (float64), not 0."""
    import scipy.sparse as sp

    M = sp.csr_matrix(
        (np.array([1e8, 1.0, -1e8, 0.5], np.float32), np.array([3, 3, 3, 1]), np.array([0, 4])), shape=(1, 5)
    )
    one = sp.csr_matrix((np.array([0.5, 1.0], np.float32), np.array([1, 3]), np.array([0, 2])), shape=(1, 5))
    s = simlsh.HashedGaussian(bits=256, seed=1)
    np.testing.assert_array_equal(s.sign(M), s.sign(one))
    sp.save_npz(tmp_path / "m.npz", M, compressed=False)
    np.testing.assert_array_equal(
        cli_codes(cli, tmp_path, tmp_path / "m.npz", "--signer", "hashed-gaussian", "--bits", 256, "--seed", 1),
        s.sign(one),
    )


@pytest.mark.parametrize("kind", [k for k in KINDS if k not in NEEDS_DIM] + [None])
def test_documents_give_the_same_bits_at_the_defaults(cli, tmp_path, kind):
    """Text at each front end's defaults (the tokenizer, its TF-IDF table fitted on the
    documents, the signer, width and seed), and with every hashed signer."""
    docs = tweets(500) + FEATURELESS
    (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n")
    args = [] if kind is None else ["--signer", kind]
    want = cli_codes(cli, tmp_path, tmp_path / "docs.txt", *args)
    d = _simlsh.defaults()
    s = simlsh.signer(kind or _simlsh.default_signer("text", d["bits"]), bits=d["bits"], seed=d["seed"])
    np.testing.assert_array_equal(s.sign(docs), want)
    # Featureless documents have the all-zero signature.
    assert not want[-len(FEATURELESS):].any()


def test_spark_signs_as_the_command_line(spark, cli, tmp_path):
    """Spark's signatures at its defaults equal the command line's, for documents (TF-IDF fitted
    across partitions), dense vectors and sparse rows with duplicate entries."""
    from simlsh import spark as S

    docs = tweets(600) + FEATURELESS
    (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n")
    want = cli_codes(cli, tmp_path, tmp_path / "docs.txt")
    df = spark.createDataFrame(list(enumerate(docs)), "id bigint, text string").repartition(3)
    got = {r.id: r.fp for r in S.signatures(df, "text").collect()}
    np.testing.assert_array_equal(np.array([got[i] for i in range(len(docs))], np.int64).view(np.uint64), want[:, 0])

    X = read_fvecs(GLOVE)[:300]
    np.save(tmp_path / "x.npy", X)
    want = cli_codes(cli, tmp_path, tmp_path / "x.npy", "--bits", 128)
    df = spark.createDataFrame([(i, X[i].tolist()) for i in range(len(X))], "id bigint, v array<float>")
    signer = simlsh.signer(_simlsh.default_signer("dense", 128), bits=128)
    got = {r.id: r.fp for r in S.signatures(df.repartition(2), "v", signer).collect()}
    np.testing.assert_array_equal(np.array([got[i] for i in range(len(X))], np.int64).view(np.uint64), want)

    import scipy.sparse as sp

    M = sparse_with_duplicates(200)
    sp.save_npz(tmp_path / "m.npz", M, compressed=False)
    want = cli_codes(cli, tmp_path, tmp_path / "m.npz", "--bits", 64)
    rows = [(r, M.indices[M.indptr[r]:M.indptr[r + 1]].tolist(), M.data[M.indptr[r]:M.indptr[r + 1]].tolist())
            for r in range(M.shape[0])]
    df = spark.createDataFrame(rows, "id bigint, ix array<int>, vals array<float>")
    got = {r.id: r.fp for r in S.signatures(df.repartition(2), ("ix", "vals")).collect()}
    np.testing.assert_array_equal(np.array([got[i] for i in range(M.shape[0])], np.int64).view(np.uint64), want[:, 0])


# ---------------------------------------------------------------------------------------------
# Pairs.


def cli_pairs(cli, tmp_path, path, *args) -> tuple[dict, dict, list[int]]:
    """The command line's pairs ``{(a, b): (distance, cosine)}``, its statistics and its
    rows without features."""
    pairs, stats, empty = tmp_path / "pairs.tsv", tmp_path / "stats.json", tmp_path / "empty.txt"
    run_cli(cli, "dedup", path, *args, "--pairs", pairs, "--stats", stats, "--empty", empty)
    out = {}
    for line in pairs.read_text().splitlines()[1:]:
        a, b, d, c = line.split("\t")
        out[(int(a), int(b))] = (int(d), float(c))
    return out, json.loads(stats.read_text())["values"], [int(x) for x in empty.read_text().split()[1:]]


def python_pairs(r: simlsh.DedupResult) -> dict:
    return {(int(a), int(b)): (int(d), float(c)) for a, b, d, c in zip(r.i, r.j, r.distance, r.cosine)}


def same(got: dict, want: dict, what: str) -> None:
    assert got.keys() == want.keys(), (
        f"{what}: {len(got)} pairs vs {len(want)}; missing {sorted(set(want) - set(got))[:5]}, "
        f"extra {sorted(set(got) - set(want))[:5]}"
    )
    for p, (d, c) in got.items():  # the command line writes cosines to 6 decimals
        assert d == want[p][0] and c == pytest.approx(want[p][1], abs=1e-6), (what, p)


def near_copies(X: np.ndarray, rng, noise: float) -> np.ndarray:
    Y = X[: len(X) // 4] + noise * rng.standard_normal((len(X) // 4, X.shape[1])).astype(np.float32)
    return np.concatenate([X, Y]).astype(np.float32)


def test_documents_dedup_everywhere(cli, spark, tmp_path):
    """``simlsh dedup --cosine 0.8``, ``simlsh.dedup(docs, threshold=0.8)`` and
    ``spark.near_duplicates(df, ..., threshold=0.8)`` on the bundled tweets with documents
    without features: the same pairs, the featureless rows apart."""
    from simlsh import spark as S

    docs = tweets(4000) + FEATURELESS * 2
    (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n")
    want, stats, empty = cli_pairs(cli, tmp_path, tmp_path / "docs.txt", "--cosine", 0.8)
    assert len(want) > 100
    r = simlsh.dedup(docs, threshold=0.8)
    same(python_pairs(r), want, "python")
    assert r.empty.tolist() == empty == list(range(4000, len(docs)))
    assert r.scheme == stats["scheme"] and r.bits == stats["bits_planned"]
    df = spark.createDataFrame(list(enumerate(docs)), "id bigint, text string").repartition(3)
    pairs, report = S.near_duplicates(df, "id", "text", threshold=0.8, return_report=True)
    same({(x.a, x.b): (x.distance, x.cosine) for x in pairs.collect()}, want, "spark")
    assert report["empty"] == len(FEATURELESS) * 2 and report["scheme"] == stats["scheme"]


def test_vectors_dedup_everywhere(cli, spark, tmp_path):
    """Dense vectors (zero rows among them) and sparse rows (duplicate entries among them)."""
    from simlsh import spark as S

    rng = np.random.default_rng(4)
    X = near_copies(read_fvecs(GLOVE)[:1600], rng, 0.08)
    X[[5, 77]] = 0.0
    np.save(tmp_path / "x.npy", X)
    want, stats, empty = cli_pairs(cli, tmp_path, tmp_path / "x.npy", "--cosine", 0.9)
    assert len(want) > 100 and empty == [5, 77]
    r = simlsh.dedup(X, threshold=0.9)
    same(python_pairs(r), want, "python dense")
    assert r.empty.tolist() == empty and r.scheme == stats["scheme"]
    df = spark.createDataFrame([(i, X[i].tolist()) for i in range(len(X))], "id bigint, v array<float>")
    pairs = S.near_duplicates(df.repartition(3), "id", "v", threshold=0.9)
    same({(x.a, x.b): (x.distance, x.cosine) for x in pairs.collect()}, want, "spark dense")

    import scipy.sparse as sp

    M = sparse_with_duplicates(600, 300)
    M = sp.vstack([M, M[:150] + sp.random(150, 300, density=0.01, format="csr", dtype=np.float32, random_state=1)]).tocsr()
    sp.save_npz(tmp_path / "m.npz", M, compressed=False)
    want, stats, empty = cli_pairs(cli, tmp_path, tmp_path / "m.npz", "--cosine", 0.7)
    assert len(want) > 50 and empty
    r = simlsh.dedup(M, threshold=0.7)
    same(python_pairs(r), want, "python sparse")
    assert r.empty.tolist() == empty
    rows = [(i, M.indices[M.indptr[i]:M.indptr[i + 1]].tolist(), M.data[M.indptr[i]:M.indptr[i + 1]].tolist())
            for i in range(M.shape[0])]
    df = spark.createDataFrame(rows, "id bigint, ix array<int>, vals array<float>")
    pairs = S.near_duplicates(df.repartition(3), "id", ("ix", "vals"), threshold=0.7)
    same({(x.a, x.b): (x.distance, x.cosine) for x in pairs.collect()}, want, "spark sparse")


def test_widths_planned_beyond_256_bits(cli, spark, tmp_path):
    """60,000 short documents: the command line plans 512-bit signatures, and Python and
    Spark plan the same width, scheme and pairs (Spark's plan compared, its join is the one
    tested above at 256 bits)."""
    from simlsh import spark as S

    rng = np.random.default_rng(7)
    vocab = np.array([f"w{i}" for i in range(50_000)])
    base = [" ".join(rng.choice(vocab, 12)) for _ in range(48_000)]
    edits = []
    for k in range(12_000):
        words = base[k].split()
        words[int(rng.integers(0, 12))] = str(rng.choice(vocab))
        edits.append(" ".join(words))
    docs = base + edits
    (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n")
    want, stats, _ = cli_pairs(cli, tmp_path, tmp_path / "docs.txt", "--cosine", 0.8)
    assert stats["bits_planned"] > 256 and len(want) > 10_000
    r = simlsh.dedup(docs, threshold=0.8)
    assert r.bits == stats["bits_planned"] and r.scheme == stats["scheme"]
    same(python_pairs(r), want, "python")
    df = spark.createDataFrame(list(enumerate(docs)), "id bigint, text string")
    signer, _, plan = S.plan(df, "text", 0.8)
    assert signer.bits == stats["bits_planned"] and str(plan["scheme"]) == stats["scheme"]


def test_featureless_rows_never_pair(cli, tmp_path):
    """Documents of emoji, punctuation or stop words only have no features: counted apart by
    every front end, in no pair and each its own cluster."""
    docs = ["the cat sat on the mat", "the cat sat on the mat!", "and the of", "🙂", "...", "of and the"]
    (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n")
    want, _, empty = cli_pairs(cli, tmp_path, tmp_path / "docs.txt", "--cosine", 0.5, "--stop-words", "english")
    r = simlsh.dedup(docs, threshold=0.5, tokenizer=simlsh.Tokenizer(stop_words="english"))
    assert list(want) == [(0, 1)] and python_pairs(r).keys() == want.keys()
    assert r.empty.tolist() == empty == [2, 3, 4, 5]
    assert r.labels.tolist() == [0, 0, 2, 3, 4, 5]
    # Radius joins too: their all-zero signatures are within any radius of each other.
    r = simlsh.dedup(docs, radius=3, tokenizer=simlsh.Tokenizer(stop_words="english"))
    assert set(zip(r.i.tolist(), r.j.tolist())) <= {(0, 1)}


# ---------------------------------------------------------------------------------------------
# FAISS's habits.


def test_faiss_layouts_and_ids():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 2**64, size=(50, 4), dtype=np.uint64)
    as_bytes = codes.view(np.uint8)  # FAISS's layout: 32 bytes a code, little-endian words
    np.testing.assert_array_equal(np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :64],
                                  np.unpackbits(codes[:, :1].view(np.uint8), axis=1, bitorder="little"))
    idx = simlsh.LinearScan(bits=256)
    idx.add(as_bytes)
    D, I = idx.search(as_bytes[:3], 1)
    assert I[:, 0].tolist() == [0, 1, 2] and D[:, 0].tolist() == [0, 0, 0]
    # A single code as a 1-D array is one query, not several rows.
    D1, I1 = idx.search(codes[7], 2)
    assert D1.shape == (1, 2) and I1[0, 0] == 7
    D1, I1 = idx.search(as_bytes[7], 2)
    assert I1[0, 0] == 7
    # Odd byte counts are padded: 3 bytes are 24-bit codes.
    small = simlsh.LinearScan(bits=24)
    small.add(as_bytes[:, :3].copy())
    assert small.search(as_bytes[:2, :3].copy(), 1)[1][:, 0].tolist() == [0, 1]
    # Default ids after a removal continue past the largest id, never colliding.
    idx.remove([0, 49])
    idx.add(codes[:2])
    lims, D, I = idx.range_search(codes[:2], 0)
    assert I.tolist() == [50, 1, 51] and len(idx) == 50
    for spec in ("manku", "mih", "permutation"):
        x = simlsh.Index(bits=256, spec=spec)
        x.add(codes[:10])
        x.remove([3])
        x.add(codes[10:12])
        assert sorted(x.search(codes[10:12], 1)[1][:, 0].tolist()) == [10, 11]


@pytest.mark.parametrize("weighting", ["tfidf", "tf"])
def test_an_index_file_gives_back_its_signer_and_tokenizer(cli, tmp_path, weighting):
    """An index built by the command line from documents records its signer and tokenizer
    (options, stop words, TF-IDF table embedded): Python reads them back and signs the same
    documents into the stored codes (each found at distance 0), and query documents as
    ``simlsh index query`` does."""
    docs = tweets(300)
    (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n")
    idx_path = tmp_path / "docs.idx"
    run_cli(cli, "index", "build", tmp_path / "docs.txt", idx_path, "--kind", "linear",
            "--bits", 128, "--seed", 9, "--weighting", weighting, "--stop-words", "english",
            "--ngram", 2)
    idx = simlsh.load_index(idx_path)
    s, tok = idx.signer, idx.tokenizer
    assert (s.bits, s.params["seed"]) == (128, 9)
    assert tok.is_fitted and tok.params["ngram"] == 2 and tok.params["stop_words"] == "english"
    assert tok.params["weighting"] == weighting and (tok.idf is not None) == (weighting == "tfidf")
    codes = s.sign(docs, tokenizer=tok)
    D, I = idx.search(codes, 1)
    assert (D[:, 0] == 0).all()
    # Query documents: the command line's answers.
    queries = [d.upper() + " extra words" for d in docs[:40]]
    (tmp_path / "q.txt").write_text("\n".join(queries) + "\n")
    out = tmp_path / "hits.tsv"
    run_cli(cli, "index", "query", idx_path, tmp_path / "q.txt", "--k", 3, "--out", out)
    D, I = idx.search(s.sign(queries, tokenizer=tok), 3)
    rows = [line.split("\t") for line in out.read_text().splitlines() if line and not line.startswith("query")]
    got = {(int(q), int(i)): int(d) for q, i, d, *_ in rows}
    want = {(q, int(I[q, r])): int(D[q, r]) for q in range(len(queries)) for r in range(3)}
    assert got == want


def test_an_index_of_vectors_gives_back_its_signer(cli, tmp_path):
    X = read_fvecs(GLOVE)[:500]
    np.save(tmp_path / "x.npy", X)
    run_cli(cli, "index", "build", tmp_path / "x.npy", tmp_path / "x.idx", "--kind", "mih",
            "--signer", "super-bit:depth=16", "--bits", 64, "--seed", 4)
    idx = simlsh.load_index(tmp_path / "x.idx")
    assert idx.tokenizer is None
    s = idx.signer
    assert (s.bits, s.dim, s.params["depth"]) == (64, X.shape[1], 16)
    D, _ = idx.search(s.sign(X), 1)
    assert (D[:, 0] == 0).all()
    # Codes added from Python record no signer.
    assert simlsh.LinearScan(bits=64).signer is None


def test_index_searches_keep_rows_without_features_apart(cli, tmp_path):
    """Rows without features (all-zero codes) are no one's neighbours in index searches, as in
    joins and in ``simlsh index query``; ``featureless=False`` searches codes as codes."""
    docs = ["the quick brown fox", "...", "lorem ipsum dolor", "", "🙂🙂"]
    s = simlsh.HashedGaussian(bits=64, seed=1)
    tok = simlsh.Tokenizer(weighting="tf")
    codes = s.sign(docs, tokenizer=tok)
    assert not codes[[1, 3, 4]].any() and codes[[0, 2]].any(axis=1).all()
    for idx in (simlsh.LinearScan(bits=64), simlsh.MultiIndex(bits=64)):
        idx.add(codes)
        D, I = idx.search(codes, 5)
        assert (I[[1, 3, 4]] == -1).all() and (D[[1, 3, 4]] == 2**31 - 1).all()
        assert set(I[0][I[0] >= 0]) == {0, 2} and set(I[2][I[2] >= 0]) == {0, 2}
        lims, D, I = idx.range_search(codes, 64)
        hits = [set(I[lims[q]:lims[q + 1]].tolist()) for q in range(5)]
        assert hits == [{0, 2}, set(), {0, 2}, set(), set()]
        # As codes: the zero codes are found, at distance 0 from each other.
        D, I = idx.search(codes, 5, featureless=False)
        assert set(I[1][D[1] == 0].tolist()) == {1, 3, 4}
        lims, D, I = idx.range_search(codes, 0, featureless=False)
        assert set(I[lims[3]:lims[4]].tolist()) == {1, 3, 4}
        # A mask names the queries without features.
        D, I = idx.search(codes[:1], 2, featureless=np.array([True]))
        assert (I == -1).all()


def cli_hits(cli, tmp_path, index, queries, *args) -> dict[int, list[tuple[int, int]]]:
    """``simlsh index query``'s hits ``{query: [(id, distance), ...]}`` in its order."""
    out = tmp_path / "hits.tsv"
    run_cli(cli, "index", "query", index, queries, *args, "--out", out)
    hits: dict[int, list[tuple[int, int]]] = {}
    for line in out.read_text().splitlines():
        if line and not line.startswith("query"):
            q, i, d, *_ = line.split("\t")
            hits.setdefault(int(q), []).append((int(i), int(d)))
    return hits


@pytest.mark.parametrize("kind", ["linear", "mih"])
@pytest.mark.parametrize("signed", [True, False], ids=["signer", "raw-codes"])
def test_index_query_and_python_leave_featureless_rows_out_alike(cli, tmp_path, kind, signed):
    """An index holding all-zero codes (rows without features), with its signer recorded (built
    from documents by the command line) or of raw codes (no signer): ``simlsh index query`` and
    ``Index.search``/``range_search`` follow the library's one rule (all-zero codes are no one's
    neighbours, all-zero queries have none) and give the same hits, by k and by radius."""
    docs = tweets(150)
    docs[10:10], docs[70:70] = FEATURELESS[1:3], FEATURELESS[1:]
    idx_path = tmp_path / "x.idx"
    if signed:
        (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n")
        run_cli(cli, "index", "build", tmp_path / "docs.txt", idx_path, "--kind", kind, "--bits", 64, "--seed", 2)
        idx = simlsh.load_index(idx_path)
        assert idx.signer is not None
        queries = docs[::9] + FEATURELESS[1:]
        (tmp_path / "q.txt").write_text("\n".join(queries) + "\n")
        q, q_path = idx.signer.sign(queries, tokenizer=idx.tokenizer), tmp_path / "q.txt"
        codes = idx.signer.sign(docs, tokenizer=idx.tokenizer)
    else:
        codes = simlsh.HashedGaussian(bits=64, seed=2).sign(docs, tokenizer=simlsh.Tokenizer(weighting="tf"))
        np.save(tmp_path / "codes.npy", codes)
        run_cli(cli, "index", "build", tmp_path / "codes.npy", idx_path, "--kind", kind, "--bits", 64)
        idx = simlsh.load_index(idx_path)
        assert idx.signer is None
        q, q_path = np.ascontiguousarray(codes[::9]), tmp_path / "q.npy"
        np.save(q_path, q)
    zero = set(np.flatnonzero(~codes.any(axis=1)).tolist())
    assert len(zero) == 5 and len(idx) == len(docs)
    empty_queries = set(np.flatnonzero(~q.any(axis=1)).tolist())
    assert empty_queries
    for args in (("--k", 6), ("--radius", 24)):
        got = cli_hits(cli, tmp_path, idx_path, q_path, *args)
        if args[0] == "--k":
            D, I = idx.search(q, 6)
            want = {r: [(int(i), int(d)) for i, d in zip(I[r], D[r]) if i >= 0] for r in range(len(q))}
        else:
            lims, D, I = idx.range_search(q, 24)
            want = {r: list(zip(I[lims[r]:lims[r + 1]].tolist(), D[lims[r]:lims[r + 1]].tolist())) for r in range(len(q))}
        want = {r: h for r, h in want.items() if h}
        assert got == want, args
        assert not any(i in zero for h in got.values() for i, _ in h)
        assert not set(got) & empty_queries
        assert all(len(h) == 6 for r, h in got.items()) if args[0] == "--k" else got
    # Codes as codes (Python's featureless=False, the command line's --zero-codes) find the
    # zero codes again, alike.
    got = cli_hits(cli, tmp_path, idx_path, q_path, "--k", 6, "--zero-codes")
    D, I = idx.search(q, 6, featureless=False)
    assert got == {r: [(int(i), int(d)) for i, d in zip(I[r], D[r])] for r in range(len(q))}
    assert zero <= set(I[sorted(empty_queries)].ravel().tolist())


def cli_knn(cli, tmp_path, codes_path, k, *args) -> dict[int, list[tuple[int, int]]]:
    """``simlsh knn``'s graph ``{row: [(neighbour, distance), ...]}`` in its order."""
    out = tmp_path / "knn.tsv"
    run_cli(cli, "knn", codes_path, "--k", k, *args, "--out", out)
    graph: dict[int, list[tuple[int, int]]] = {}
    for line in out.read_text().splitlines()[1:]:
        r, n, d, _ = line.split("\t")
        graph.setdefault(int(r), []).append((int(n), int(d)))
    return graph


def test_raw_code_joins_and_python_leave_featureless_rows_out_alike(cli, tmp_path):
    """Stored codes with all-zero rows (rows without features): ``simlsh dedup``/``cluster``
    over the codes file and ``simlsh.self_join``/``clusters`` give the same pairs and clusters,
    ``simlsh knn`` and ``simlsh.knn_graph`` the same graph, at their defaults (the library's
    rule: all-zero codes are never paired and no one's neighbours) and as codes
    (``--zero-codes``, ``featureless=False``)."""
    docs = tweets(400)
    docs[20:20], docs[200:200] = FEATURELESS, FEATURELESS[1:]
    codes = simlsh.HashedGaussian(bits=128, seed=2).sign(docs, tokenizer=simlsh.Tokenizer(weighting="tf"))
    zero = np.flatnonzero(~codes.any(axis=1)).tolist()
    assert len(zero) == 7
    path = tmp_path / "codes.npy"
    np.save(path, codes)
    for cli_args, featureless in (((), "zero"), (("--zero-codes",), False)):
        want_pairs, stats, empty = cli_pairs(cli, tmp_path, path, "--radius", 30, *cli_args)
        i, j, d = simlsh.self_join(codes, 30, featureless=featureless)
        got = {(int(a), int(b)): int(x) for a, b, x in zip(i, j, d)}
        assert got == {p: dc[0] for p, dc in want_pairs.items()}, cli_args
        assert len(got) > 20
        zero_pairs = [p for p in got if p[0] in zero and p[1] in zero]
        assert (zero_pairs == []) == (featureless == "zero") and stats["empty"] == len(empty)
        assert empty == (zero if featureless == "zero" else [])
        if featureless == "zero":  # simlsh.dedup of codes, as simlsh dedup of a codes file
            r = simlsh.dedup(codes, radius=30)
            assert {(int(a), int(b)): int(x) for a, b, x in zip(r.i, r.j, r.distance)} == got
            assert r.empty.tolist() == empty
        # Clusters: the components of the pairs, alike.
        out = run_cli(cli, "cluster", path, "--radius", 30, *cli_args)
        labels = [int(l.split("\t")[1]) for l in out.splitlines()[1:]]
        np.testing.assert_array_equal(labels, simlsh.clusters(len(codes), i, j))
        # The k-NN graph, alike.
        D, I = simlsh.knn_graph(codes, 4, featureless=featureless)
        want = {r: [(int(n), int(x)) for n, x in zip(I[r], D[r]) if n >= 0] for r in range(len(codes))}
        assert cli_knn(cli, tmp_path, path, 4, *cli_args) == {r: h for r, h in want.items() if h}, cli_args
        found = {n for r in range(len(codes)) for n in I[r].tolist()}
        assert (set(zero) & found == set()) == (featureless == "zero")


def test_a_memory_budget_plans_the_same_width_everywhere(cli, tmp_path):
    """The memory budget is the run's whole budget, split once by the library: the command
    line's ``--memory`` and Python's ``plan_join(memory=...)`` plan the same width (512 bits
    without a budget, the signatures' share of 9 MB holding 256-bit signatures of the 60,000
    rows but not 512-bit ones), and without one both take the library's default (what is
    available)."""
    rng = np.random.default_rng(9)
    n, dim = 60_000, 64
    x = rng.standard_normal((n // 2, dim)).astype(np.float32)
    x = np.vstack([x, x + 0.05 * rng.standard_normal(x.shape).astype(np.float32)])
    np.save(tmp_path / "x.npy", x)
    budget = 150 * n
    _, free, _ = cli_pairs(cli, tmp_path, tmp_path / "x.npy", "--cosine", 0.8)
    _, bounded, _ = cli_pairs(cli, tmp_path, tmp_path / "x.npy", "--cosine", 0.8, "--memory", budget)
    assert free["bits_planned"] == simlsh.plan_join(0.8, rows=n, features=dim)["bits"] == 512
    planned = simlsh.plan_join(0.8, rows=n, features=dim, memory=budget)
    assert bounded["bits_planned"] == planned["bits"] == 256
    assert str(planned["scheme"]) == bounded["scheme"]
    # The share is a third of what the rows' state (6 bytes a row) leaves.
    assert n * 256 // 8 <= (budget - 6 * n) // 3 < n * 512 // 8
    with pytest.raises(ValueError, match="memory"):
        simlsh.plan_join(0.8, rows=n, features=dim, memory=100_000)
