#!/usr/bin/env python3
"""PyTorch (CPU) twin of bench/rgcn: the same CrossAug-sized R-GCN scorer written
with index_add_/scatter_reduce (no PyG), trained on the exact batches the Go benchmark
dumped (-dump). Prints one JSON line with ms/step.

Usage: rgcn_torch.py BATCHES.json [--threads 2] [--steps 20] [--warmup 3] [--mode train|forward]
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
from torch import nn
import torch.nn.functional as F


class RGCNConv(nn.Module):
    """PyG RGCNConv (aggr='mean', root weight, bias, no bases), relation by relation
    like PyG's CPU path: mean over incoming edges of each relation, then one matmul."""

    def __init__(self, inp, out, num_relations):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_relations, inp, out))
        self.root = nn.Parameter(torch.empty(inp, out))
        self.bias = nn.Parameter(torch.zeros(out))
        for w in (self.weight, self.root):
            a = math.sqrt(6.0 / (w.size(-2) + w.size(-1)))
            nn.init.uniform_(w, -a, a)

    def forward(self, x, rel_edges):
        out = x @ self.root + self.bias
        for r, (src, dst, inv_deg) in enumerate(rel_edges):
            if src.numel() == 0:
                continue
            agg = torch.zeros_like(x).index_add_(0, dst, x.index_select(0, src))
            out = out + (agg * inv_deg) @ self.weight[r]
        return out


class Scorer(nn.Module):
    """CrossAug PyGSubgraphMissingnessClassifier."""

    def __init__(self, feat, hidden, num_relations, dropout=0.1):
        super().__init__()
        self.inp = nn.Linear(feat, hidden)
        self.ntype = nn.Embedding(3, hidden)
        self.convs = nn.ModuleList([RGCNConv(hidden, hidden, num_relations) for _ in range(2)])
        self.norms = nn.ModuleList([nn.LayerNorm(hidden) for _ in range(2)])
        self.head1 = nn.Linear(2 * hidden, hidden)
        self.head2 = nn.Linear(hidden, 1)
        self.dropout = dropout

    def forward(self, b):
        h = self.inp(b["x"]) + self.ntype(b["ntype"])
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms)):
            h = norm(F.gelu(conv(h, b["rel_edges"])))
            if i < len(self.convs) - 1:
                h = F.dropout(h, self.dropout, self.training)
        g, num_graphs, counts = b["graph"], b["num_graphs"], b["counts"]
        mean = torch.zeros(num_graphs, h.size(1)).index_add_(0, g, h) / counts
        idx = g.unsqueeze(1).expand_as(h)
        mx = torch.zeros(num_graphs, h.size(1)).scatter_reduce(0, idx, h, reduce="amax", include_self=False)
        z = F.gelu(self.head1(torch.cat([mean, mx], 1)))
        z = F.dropout(z, self.dropout, self.training)
        return self.head2(z).squeeze(1)


def build_batch(graphs, feat, num_relations, gen):
    """Concatenate graphs into one disjoint graph (PyG Batch layout)."""
    src, dst, et, nt, gid, labels = [], [], [], [], [], []
    off = 0
    for i, g in enumerate(graphs):
        src += [s + off for s in g["src"]]
        dst += [d + off for d in g["dst"]]
        et += g["etype"]
        nt += g["ntype"]
        gid += [i] * g["n"]
        labels.append(g["label"])
        off += g["n"]
    n = off
    src, dst, et = torch.tensor(src), torch.tensor(dst), torch.tensor(et)
    rel_edges = []
    for r in range(num_relations):
        m = et == r
        s, d = src[m], dst[m]
        deg = torch.zeros(n).index_add_(0, d, torch.ones(d.numel()))
        rel_edges.append((s, d, (1.0 / deg.clamp(min=1)).unsqueeze(1)))
    graph = torch.tensor(gid)
    counts = torch.bincount(graph, minlength=len(graphs)).clamp(min=1).unsqueeze(1).float()
    return {
        "x": torch.randn(n, feat, generator=gen),
        "ntype": torch.tensor(nt),
        "rel_edges": rel_edges,
        "graph": graph,
        "num_graphs": len(graphs),
        "counts": counts,
        "y": torch.tensor(labels, dtype=torch.float32),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("batches")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--mode", default="train", choices=["train", "forward"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    data = json.load(open(args.batches))
    feat, hidden, rels = data["feat"], data["hidden"], data["relations"]
    batches = [build_batch(gs, feat, rels, gen) for gs in data["batches"]]
    model = Scorer(feat, hidden, rels)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.BCEWithLogitsLoss()

    def step(i):
        b = batches[i % len(batches)]
        if args.mode == "forward":
            model.eval()
            with torch.no_grad():
                model(b)
            return 0.0
        model.train()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(b), b["y"])
        loss.backward()
        opt.step()
        return loss.item()

    for i in range(len(batches) + args.warmup):
        step(i)
    times = []
    loss = 0.0
    for i in range(args.steps):
        t = time.perf_counter()
        loss = step(i)
        times.append((time.perf_counter() - t) * 1000)
    params = sum(p.numel() for p in model.parameters())
    real_nodes = statistics.mean(b["x"].shape[0] for b in batches)
    print(json.dumps({
        "impl": "pytorch", "torch": torch.__version__, "threads": torch.get_num_threads(), "mode": args.mode,
        "ms_per_step": statistics.median(times), "ms_mean": statistics.mean(times), "ms_min": min(times),
        "params": params, "real_nodes": real_nodes, "final_loss": loss,
    }))


if __name__ == "__main__":
    sys.exit(main())
