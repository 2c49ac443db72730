#!/usr/bin/env python3
"""PyTorch (CPU) twin of bench/embed: a BERT-shaped encoder at bge-small's shapes
(word + position + token-type embeddings, LayerNorm, 12 post-norm
nn.TransformerEncoderLayer blocks with GELU, CLS pooling, L2 normalisation) with
random weights, run on full-length batches of random ids under inference_mode.
nn.TransformerEncoder stands in for BertModel: the same matmuls and attention FLOPs.
Each batch is timed on its own; prints one JSON line with the median batch's
passages/s.

Usage: embed_torch.py [--passages 32] [--batch 8] [--layers 12] [--hidden 384]
                      [--heads 12] [--len 512] [--threads 2]
"""
import argparse
import json
import statistics
import time

import torch
from torch import nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, vocab, hidden, heads, layers, length):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(length, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=False, layer_norm_eps=1e-12)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.norm(self.word(ids) + self.pos(pos) + self.token_type(torch.zeros_like(ids)))
        mask = torch.zeros(ids.shape, dtype=torch.bool)  # full-length passages: nothing padded
        h = self.blocks(x, src_key_padding_mask=mask)
        return F.normalize(h[:, 0], dim=-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--len", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    m = Encoder(30522, a.hidden, a.heads, a.layers, a.len).eval()
    ids = torch.randint(0, 30522, (a.passages, a.len))
    with torch.inference_mode():
        m(ids[: a.batch])  # warm-up
        per_batch = []  # ms per passage of each batch; the median is the figure, as in bench/embed
        for lo in range(0, a.passages, a.batch):
            t0 = time.perf_counter()
            m(ids[lo: lo + a.batch])
            per_batch.append(1000 * (time.perf_counter() - t0) / len(ids[lo: lo + a.batch]))
    median = statistics.median(per_batch)
    print(json.dumps({"passages_per_s": 1000 / median, "ms_per_passage": median,
                      "ms_per_passage_min": min(per_batch), "ms_per_passage_max": max(per_batch),
                      "torch": torch.__version__, "threads": a.threads}))


if __name__ == "__main__":
    main()
