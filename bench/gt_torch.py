#!/usr/bin/env python3
"""PyTorch (CPU) twin of bench/gt: forward + backward of G-Retriever's GraphTransformer
(PyG TransformerConv written out with index_select/index_add_/scatter_reduce, no PyG),
on the exact graph structures bench/gt dumped (-dump). Prints one JSON line.

Usage: gt_torch.py BATCHES.json [--threads 2] [--steps 10] [--warmup 2]
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


class TransformerConv(nn.Module):
    """PyG TransformerConv(in, out, heads, concat=True, beta=False, edge_dim, root_weight=True)."""

    def __init__(self, inp, out, heads, edge_dim):
        super().__init__()
        self.heads, self.out = heads, out
        self.lin_query = nn.Linear(inp, heads * out)
        self.lin_key = nn.Linear(inp, heads * out)
        self.lin_value = nn.Linear(inp, heads * out)
        self.lin_edge = nn.Linear(edge_dim, heads * out, bias=False)
        self.lin_skip = nn.Linear(inp, heads * out)

    def forward(self, x, src, dst, edge_attr):
        h, c, n = self.heads, self.out, x.size(0)
        q = self.lin_query(x).view(-1, h, c)
        k = self.lin_key(x).view(-1, h, c)
        v = self.lin_value(x).view(-1, h, c)
        e = self.lin_edge(edge_attr).view(-1, h, c)
        kj = k.index_select(0, src) + e
        vj = v.index_select(0, src) + e
        logits = (q.index_select(0, dst) * kj).sum(-1) / math.sqrt(c)  # [E, H]
        idx = dst.unsqueeze(1).expand_as(logits)
        mx = torch.full((n, h), float("-inf")).scatter_reduce(0, idx, logits.detach(), reduce="amax", include_self=True)
        ex = (logits - mx.index_select(0, dst)).exp()
        den = torch.zeros(n, h).index_add_(0, dst, ex)
        alpha = ex / (den.index_select(0, dst) + 1e-16)
        out = torch.zeros(n, h, c).index_add_(0, dst, vj * alpha.unsqueeze(-1)).view(n, h * c)
        return out + self.lin_skip(x)


class GraphTransformer(nn.Module):
    def __init__(self, dim, layers, heads):
        super().__init__()
        self.convs = nn.ModuleList([TransformerConv(dim, dim // heads, heads, dim) for _ in range(layers)])
        self.bns = nn.ModuleList([nn.BatchNorm1d(dim) for _ in range(layers - 1)])

    def forward(self, x, src, dst, edge_attr):
        for i, conv in enumerate(self.convs[:-1]):
            x = F.relu(self.bns[i](conv(x, src, dst, edge_attr)))
        return self.convs[-1](x, src, dst, edge_attr)


def build(graphs, dim, gen):
    src, dst, gid = [], [], []
    off = 0
    for i, g in enumerate(graphs):
        src += [s + off for s in g["src"]]
        dst += [d + off for d in g["dst"]]
        gid += [i] * g["n"]
        off += g["n"]
    graph = torch.tensor(gid)
    counts = torch.bincount(graph, minlength=len(graphs)).clamp(min=1).unsqueeze(1).float()
    return {
        "x": torch.randn(off, dim, generator=gen), "edge_attr": torch.randn(len(src), dim, generator=gen),
        "src": torch.tensor(src), "dst": torch.tensor(dst), "graph": graph, "counts": counts, "num_graphs": len(graphs),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("batches")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    data = json.load(open(args.batches))
    dim = data["dim"]
    batches = [build(gs, dim, gen) for gs in data["batches"]]
    model = GraphTransformer(dim, data["layers"], data["heads"])
    model.train()

    def step(i):
        b = batches[i % len(batches)]
        model.zero_grad(set_to_none=True)
        h = model(b["x"], b["src"], b["dst"], b["edge_attr"])
        pooled = torch.zeros(b["num_graphs"], h.size(1)).index_add_(0, b["graph"], h) / b["counts"]
        loss = pooled.square().mean()
        loss.backward()

    for i in range(len(batches) + args.warmup):
        step(i)
    times = []
    for i in range(args.steps):
        t = time.perf_counter()
        step(i)
        times.append((time.perf_counter() - t) * 1000)
    print(json.dumps({
        "impl": "pytorch", "torch": torch.__version__, "threads": torch.get_num_threads(),
        "ms_per_step": statistics.median(times), "ms_min": min(times),
        "params": sum(p.numel() for p in model.parameters()),
    }))


if __name__ == "__main__":
    sys.exit(main())
