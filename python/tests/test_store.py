"""The embedded store (simlsh.Store) against brute force, and simlsh.Client against a real
`simlsh serve` started on a free loopback port: the same calls give the same answers."""

from __future__ import annotations

import csv
import socket
import subprocess
import time

import numpy as np
import pytest

import simlsh
from conftest import DATA


def brute(model: dict[int, int], q: int, r: int) -> list[tuple[int, int]]:
    out = [(i, bin(c ^ q).count("1")) for i, c in model.items()]
    return sorted(((i, d) for i, d in out if d <= r), key=lambda x: (x[1], x[0]))


def clustered(rng, centers, n):
    c = centers[rng.integers(0, len(centers), n)]
    for _ in range(3):
        flip = rng.integers(0, 64, n).astype(np.uint64)
        mask = rng.random(n) < 0.5
        c = np.where(mask, c ^ (np.uint64(1) << flip), c)
    return c


def test_store_answers_as_brute_force_and_survives_reopening(tmp_path):
    rng = np.random.default_rng(3)
    centers = rng.integers(0, 2**63, 30, dtype=np.uint64) * np.uint64(2)
    path = tmp_path / "s"
    model: dict[int, int] = {}
    with simlsh.Store.create(path, bits=64, delta_limit=50) as store:
        for _ in range(10):
            ids = rng.integers(0, 500, 80).astype(np.uint64)
            ids = np.unique(ids)
            codes = clustered(rng, centers, len(ids))
            store.insert(ids, codes=codes.reshape(-1, 1))
            model.update(zip(ids.tolist(), codes.tolist()))
            gone = ids[:5]
            assert store.remove(gone) == [True] * 5
            for g in gone.tolist():
                del model[g]
        qs = clustered(rng, centers, 20)
        got = store.query(codes=qs.reshape(-1, 1), radius=4)
        for q, hits in zip(qs.tolist(), got):
            assert [(m.id, m.distance) for m in hits] == brute(model, q, 4)
        assert len(store) == len(model)
    with simlsh.Store.open(path) as store:
        assert len(store) == len(model)
        got = store.query(codes=qs.reshape(-1, 1), k=5)
        for q, hits in zip(qs.tolist(), got):
            assert [(m.id, m.distance) for m in hits] == brute(model, q, 64)[:5]
        some = next(iter(model))
        assert store.get(some)["code"] == [model[some]]
        assert store.get(10**15) is None
    # Read-only openers need no lock and refuse writes.
    ro = simlsh.Store.open(path, read_only=True)
    assert len(ro) == len(model)
    with pytest.raises(RuntimeError):
        ro.insert([1], codes=[[1]])


def test_check_insert_keeps_near_duplicates_out(tmp_path):
    with simlsh.Store.create(tmp_path / "s", bits=64) as store:
        r = store.check_insert([1, 2, 3], codes=np.array([[0xF0], [0xF1], [0xFF00]], dtype=np.uint64), radius=3)
        assert [x.inserted for x in r] == [True, False, True]
        assert r[1].matches == [simlsh.Match(1, 1, None)]
        with pytest.raises(ValueError, match="exactly one"):
            store.check_insert([4], codes=[[1]], radius=3, k=2)
        with pytest.raises(ValueError):
            store.insert([5], codes=np.array([[1, 2]], dtype=np.uint64))


def tweets(n):
    with open(DATA / "healthtweets-10k" / "healthtweets-10k.csv", newline="") as f:
        return [row["text"] for _, row in zip(range(n), csv.DictReader(f))]


def test_text_store_verifies_with_exact_cosines(tmp_path):
    docs = tweets(400)
    tok = simlsh.Tokenizer(mode="words", weighting="tf", stop_words="english")
    with simlsh.Store.create(tmp_path / "t", tokenizer=tok, bits=256, seed=3) as store:
        assert store.content == "text"
        r = store.check_insert(np.arange(len(docs)), texts=docs, cosine=0.8)
        kept = [i for i, x in enumerate(r) if x.inserted]
        refused = [x for x in r if not x.inserted]
        assert refused and all(m.cosine >= 0.8 for x in refused for m in x.matches)
        # The exact cosine of a refused document and its match, recomputed from the features.
        x = next(i for i, c in enumerate(r) if not c.inserted)
        m = r[x].matches[0]
        a, b = store_features(tok, docs[x]), store_features(tok, docs[m.id])
        assert abs(cos(a, b) - m.cosine) < 1e-6
        assert len(store) == len(kept)
    # The text model is recorded: reopened, the same document finds itself.
    with simlsh.Store.open(tmp_path / "t") as store:
        hit = store.query(texts=[docs[kept[5]]], cosine=0.999)[0]
        assert hit[0].id == kept[5] and abs(hit[0].cosine - 1) < 1e-6


def store_features(tok, text):
    toks, w = tok.features(text)
    return dict(zip(toks, w))


def cos(a, b):
    dot = sum(v * b.get(k, 0.0) for k, v in a.items())
    na = sum(v * v for v in a.values()) ** 0.5
    nb = sum(v * v for v in b.values()) ** 0.5
    return dot / (na * nb)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(cli, tmp_path):
    store = tmp_path / "served"
    subprocess.run([str(cli), "store", "create", str(store), "--quiet"], check=True)
    port = free_port()
    p = subprocess.Popen([str(cli), "serve", str(store), "--listen", f"127.0.0.1:{port}"], stderr=subprocess.PIPE, text=True)
    client = simlsh.Client(f"http://127.0.0.1:{port}")
    for _ in range(200):
        try:
            if client.health():
                break
        except OSError:
            time.sleep(0.05)
    yield client, p
    if p.poll() is None:
        p.terminate()
        p.wait(timeout=60)


def test_client_has_the_calls_of_the_store(server, tmp_path):
    client, proc = server
    codes = np.array([[0xF0], [0xF1], [0xFF00], [2**64 - 1]], dtype=np.uint64)
    with simlsh.Store.create(tmp_path / "embedded", bits=64) as local:
        answers = []
        for s in (client, local):
            answers.append([
                s.insert([10, 11], codes=codes[[0, 2]]),
                s.check_insert([1, 2, 3], codes=codes[1:], radius=3),
                s.query(codes=codes, radius=3),
                s.query(codes=codes, k=2),
                s.get(3)["code"],
                s.get(99),
                s.remove([10, 99]),
                len(s),
            ])
        assert answers[0] == answers[1]
        assert answers[0][0] == [False, False]
        assert [x.inserted for x in answers[0][1]] == [False, False, True]
        assert answers[0][4] == [2**64 - 1] and answers[0][5] is None
        assert answers[0][6] == [True, False] and answers[0][7] == 2
    with pytest.raises(ValueError, match="exactly one"):
        client.query(codes=codes, radius=3, k=1)
    with pytest.raises(ValueError):
        client.insert([1], codes=np.array([[1, 2]], dtype=np.uint64))
    assert client.ready()
    proc.terminate()
    assert proc.wait(timeout=60) == 0
    assert "checkpointed" in proc.stderr.read()


def test_defaults_are_the_librarys(tmp_path):
    """Stores state no default of their own: leaving ``content``, ``seed``, ``durability`` or
    ``verify`` out gives the store of the library's defaults (``_simlsh.defaults()``) passed
    explicitly, and the docstrings quote those values."""
    from simlsh import _simlsh

    d = _simlsh.defaults()
    seed, durability, verify = d["store_seed"], d["store_durability"], d["store_verify"]
    assert (seed, durability, verify) == (0, "sync", True)
    assert seed == d["seed"]  # the signers' default seed
    X = np.random.default_rng(3).standard_normal((50, 8)).astype(np.float32)
    made = {}
    for name, kw in (("omitted", {}), ("explicit", {"seed": seed}), ("other", {"seed": seed + 1})):
        with simlsh.Store.create(tmp_path / name, content="vectors", dim=8, bits=128, **kw) as store:
            store.insert(np.arange(50), vectors=X)
            made[name] = [store.get(i)["code"] for i in range(50)]
    assert made["omitted"] == made["explicit"] != made["other"]
    for name, kw in (("codes", {}), ("codes-explicit", {"content": "codes"})):
        with simlsh.Store.create(tmp_path / name, bits=64, **kw) as store:
            assert store.content == "codes"
    with simlsh.Store.create(tmp_path / "text", tokenizer=simlsh.Tokenizer(weighting="tf")) as store:
        assert store.content == "text"
    answers = []
    for kw in ({}, {"durability": durability, "verify": verify}):
        with simlsh.Store.open(tmp_path / "omitted", **kw) as store:
            answers.append(store.query(vectors=X[:5], k=3))
    assert answers[0] == answers[1]
    create = " ".join(simlsh.Store.create.__doc__.split())
    open_ = " ".join(simlsh.Store.open.__doc__.split())
    assert f"``seed`` (default the library's, {seed})" in create and "(default the library's, codes;" in create
    assert f"(default the library's, {durability})" in open_ and f"(default the library's, {verify})" in open_


def test_client_default_address_is_the_librarys(cli):
    """``Client()`` connects where ``simlsh serve`` listens by default: the library's address
    (``_simlsh.defaults()["listen"]``), the one ``simlsh serve --help`` shows; the docstring
    quotes it."""
    import re

    from simlsh import _simlsh

    listen = _simlsh.defaults()["listen"]
    assert listen == "127.0.0.1:7700"
    help_ = subprocess.run([str(cli), "serve", "--help"], capture_output=True, text=True, check=True).stdout
    shown = re.search(r"--listen <LISTEN>.*?\[default: ([^\]]+)\]", help_, re.S).group(1)
    assert shown == listen
    host, port = listen.rsplit(":", 1)
    client = simlsh.Client()
    assert (client._host, client._port) == (host, int(port))
    assert f"http://{listen}" in " ".join(simlsh.Client.__doc__.split())
    with pytest.raises(ValueError, match=re.escape(f"like http://{listen}, not")):
        simlsh.Client("localhost:7700")
