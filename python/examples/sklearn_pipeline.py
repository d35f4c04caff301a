"""scikit-learn: TfidfVectorizer, then signatures, then a Hamming index of the documents,
queried with new text. Runs on the bundled tweets.

    python python/examples/sklearn_pipeline.py
"""

import csv
import pathlib

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import make_pipeline

import simlsh
from simlsh.sklearn import SimHashTransformer

DATA = pathlib.Path(__file__).resolve().parents[2] / "datasets"
with open(DATA / "healthtweets-10k" / "healthtweets-10k.csv", newline="", encoding="utf-8") as f:
    tweets = [r["text"] for r in csv.DictReader(f)]

pipe = make_pipeline(TfidfVectorizer(sublinear_tf=True), SimHashTransformer(bits=256, seed=7))
codes = pipe.fit_transform(tweets)                  # (10000, 4) uint64
index = simlsh.MultiIndex(bits=256)
index.add(codes)

queries = ["Beauty really does come from within", "get a little cardio in at home"]
D, I = index.search(pipe.transform(queries), k=3)
for q, dists, ids in zip(queries, D, I):
    print(f"{q!r}:")
    for d, i in zip(dists, ids):
        print(f"  cosine ~{simlsh.cosine(int(d), 256):.2f}  {tweets[i][:90]!r}")
