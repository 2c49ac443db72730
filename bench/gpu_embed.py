#!/usr/bin/env python3
"""sentence-transformers twin of the GPU job's embedder step (gpujob embed): loads the
same folder with SentenceTransformer, embeds the probe texts gpujob wrote (--go FILE, if present)
and reports the smallest cosine and largest difference to graphloom's embeddings, then
times passages per second on texts of random letter words that fill max_seq_length
(batch 8, like gpujob).

The model runs with transformers' eager attention where sentence-transformers can
ask for it (ModernBERT would otherwise take flash attention, in bf16). With --min-cos C
it exits 1 when an embedding's cosine to graphloom's is below C.

Usage: gpu_embed.py --dir ENCODER_DIR [--go embed_go.json] [--passages 64] [--min-cos C] [--device cuda]
"""
import argparse
import json
import os
import random
import sys
import time

import torch
from sentence_transformers import SentenceTransformer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--go")
    ap.add_argument("--passages", type=int, default=64)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--min-cos", type=float)
    args = ap.parse_args()
    try:
        model = SentenceTransformer(args.dir, device=args.device, model_kwargs={"attn_implementation": "eager"})
    except TypeError:  # sentence-transformers before 3.0 takes no model_kwargs
        model = SentenceTransformer(args.dir, device=args.device)
    rec = {"bench": "embed", "impl": "sentence-transformers", "device": args.device}
    if args.go and os.path.exists(args.go):
        go = json.load(open(args.go))
        ref = model.encode(go["texts"], convert_to_tensor=True).float().cpu()
        mine = torch.tensor(go["embeddings"], dtype=torch.float32)
        cos = torch.nn.functional.cosine_similarity(ref, mine, dim=1)
        rec["min_cosine_vs_graphloom"] = cos.min().item()
        rec["max_abs_diff_vs_graphloom"] = (ref - mine).abs().max().item()
    rng = random.Random(1)
    n = model.max_seq_length

    def text():
        words, size = [], 0
        while size < 2 * n:
            w = "".join(chr(97 + rng.randrange(26)) for _ in range(3 + rng.randrange(6)))
            words.append(w)
            size += len(w) + 1
        return " ".join(words)

    texts = [text() for _ in range(args.passages)]
    model.encode(texts[:8], batch_size=8)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    t = time.perf_counter()
    model.encode(texts, batch_size=8)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    rec["passages_per_s"] = len(texts) / (time.perf_counter() - t)
    rec["max_tokens"] = n
    ok = args.min_cos is None or rec.get("min_cosine_vs_graphloom", -1) >= args.min_cos
    rec["ok"] = ok
    print(json.dumps(rec), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
