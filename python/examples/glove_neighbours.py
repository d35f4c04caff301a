"""Word embeddings: 256-bit super-bit signatures of the bundled GloVe vectors, the k-NN graph
by multi-index hashing, and the neighbours of a few words against exact cosine.

    python python/examples/glove_neighbours.py
"""

import pathlib

import numpy as np

import simlsh

DATA = pathlib.Path(__file__).resolve().parents[2] / "datasets" / "glove-6B-50d-10k"
raw = np.fromfile(DATA / "vectors.fvecs", dtype=np.int32)
X = raw.reshape(-1, raw[0] + 1)[:, 1:].view(np.float32)   # a strided view: read in place
words = (DATA / "words.txt").read_text(encoding="utf-8").split("\n")

signer = simlsh.HyperplaneSigner(dim=X.shape[1], bits=256, seed=7, distribution="super-bit")
codes = signer.sign(X)
index = simlsh.MultiIndex(bits=256)
index.add(codes)
D, I = simlsh.knn_graph(codes, 5, index=index)

unit = X / np.linalg.norm(X, axis=1, keepdims=True)
for w in ("king", "paris", "computer", "river"):
    r = words.index(w)
    exact = np.argsort(-(unit @ unit[r]))[1:6]
    print(f"{w:>9}: {', '.join(words[i] for i in I[r])}")
    print(f"{'exact':>9}: {', '.join(words[i] for i in exact)}")
est = simlsh.cosine(D[:, 0], 256)
true = np.einsum("ij,ij->i", unit, unit[I[:, 0]])
print(f"mean |estimated - exact cosine| of nearest neighbours: {np.abs(est - true).mean():.3f}")
