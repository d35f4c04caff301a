"""scikit-learn: TfidfVectorizer, then signatures, then a Hamming index of the documents,
queried with new text: 50 candidates by Hamming distance, the 3 of highest exact cosine of
their TF-IDF vectors kept (the estimate from the distance alone is only within about ±0.16
near cosine 0.5 at 256 bits). Runs on the bundled tweets.

    python python/examples/sklearn_pipeline.py
"""

import csv
import pathlib

import numpy as np

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import make_pipeline

import simlsh
from simlsh.sklearn import SimHashTransformer

DATA = pathlib.Path(__file__).resolve().parents[2] / "datasets"
with open(DATA / "healthtweets-10k" / "healthtweets-10k.csv", newline="", encoding="utf-8") as f:
    tweets = [r["text"] for r in csv.DictReader(f)]

pipe = make_pipeline(TfidfVectorizer(sublinear_tf=True), SimHashTransformer(bits=256, seed=7))
codes = pipe.fit_transform(tweets)                  # (10000, 4) uint64
X = pipe[0].transform(tweets).astype(np.float32)    # the TF-IDF vectors, for exact cosines
X.sort_indices()
index = simlsh.MultiIndex(bits=256)
index.add(codes)

queries = ["Beauty really does come from within", "get a little cardio in at home"]
Q = pipe[0].transform(queries).astype(np.float32)
Q.sort_indices()
D, I = index.search(pipe.transform(queries), k=50)  # candidates by Hamming distance
C, J = simlsh.rerank(Q, X, I, k=3)                  # the best 3 by exact cosine
for q, cos, ids in zip(queries, C, J):
    print(f"{q!r}:")
    for c, i in zip(cos, ids):
        print(f"  cosine {c:.2f}  {tweets[i][:90]!r}")
