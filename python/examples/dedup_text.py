"""Near-duplicate documents, the classic pipeline: words, TF-IDF weights, 64-bit simhash,
Hamming distance <= 3, clusters. Runs on the bundled tweets and Chinese poems.

    python python/examples/dedup_text.py
"""

import csv
import json
import pathlib
import time

import numpy as np

import simlsh

DATA = pathlib.Path(__file__).resolve().parents[2] / "datasets"


def dedup(name, docs, tokenizer, radius=3, bits=64):
    t = time.perf_counter()
    idf = simlsh.Idf.fit(docs, tokenizer=tokenizer)
    codes = simlsh.HashingTrick(bits=bits, seed=1).sign(docs, tokenizer=tokenizer.with_params(idf=idf))
    i, j, d = simlsh.self_join(codes, radius)
    labels = simlsh.clusters(len(docs), i, j)
    secs = time.perf_counter() - t
    removed = len(docs) - len(np.unique(labels))
    print(f"{name}: {len(docs)} documents, {len(i)} pairs within {radius} bits, "
          f"{removed} near-duplicates removed, {secs:.2f} s")
    for k in np.flatnonzero(d > 0)[:3]:
        print(f"  distance {d[k]}, estimated cosine {simlsh.cosine(int(d[k]), bits):.3f}:")
        print(f"    {docs[i[k]][:100]!r}")
        print(f"    {docs[j[k]][:100]!r}")


with open(DATA / "healthtweets-10k" / "healthtweets-10k.csv", newline="", encoding="utf-8") as f:
    tweets = [r["text"] for r in csv.DictReader(f)]
dedup("tweets", tweets, simlsh.Tokenizer(mode="words", stop_words="english"))

with open(DATA / "chinese-poetry-3k" / "poems.jsonl", encoding="utf-8") as f:
    poems = [json.loads(line)["text"] for line in f if line.strip()]
dedup("poems", poems, simlsh.Tokenizer(mode="chars", ngram=2, top_k=40))
