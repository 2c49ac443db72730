#!/usr/bin/env python3
"""PyTorch Geometric twin of bench/rgcn and bench/gt on a GPU: the CrossAug scorer with
PyG RGCNConv (full training step with Adam) and G-Retriever's GraphTransformer with PyG
TransformerConv (forward + backward), on the batches the Go benchmarks dumped.
Prints one JSON line per benchmark.

Usage: gpu_pyg.py --rgcn RGCN_BATCHES.json --gt GT_BATCHES.json [--steps 20] [--device cuda]
"""
import argparse
import json
import statistics
import sys
import time

import torch
from torch import nn
import torch.nn.functional as F
from torch_geometric.nn import RGCNConv, TransformerConv, global_max_pool, global_mean_pool


class Scorer(nn.Module):
    """CrossAug PyGSubgraphMissingnessClassifier."""

    def __init__(self, feat, hidden, rels):
        super().__init__()
        self.inp = nn.Linear(feat, hidden)
        self.ntype = nn.Embedding(3, hidden)
        self.convs = nn.ModuleList([RGCNConv(hidden, hidden, rels) for _ in range(2)])
        self.norms = nn.ModuleList([nn.LayerNorm(hidden) for _ in range(2)])
        self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.GELU(), nn.Dropout(0.1), nn.Linear(hidden, 1))

    def forward(self, b):
        h = self.inp(b["x"]) + self.ntype(b["ntype"])
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms)):
            h = norm(F.gelu(conv(h, b["edge_index"], b["edge_type"])))
            if i == 0:
                h = F.dropout(h, 0.1, self.training)
        pooled = torch.cat([global_mean_pool(h, b["batch"]), global_max_pool(h, b["batch"])], 1)
        return self.head(pooled).squeeze(1)


class GraphTransformer(nn.Module):
    """G-Retriever src/model/gnn.py GraphTransformer."""

    def __init__(self, dim, layers, heads):
        super().__init__()
        self.convs = nn.ModuleList([TransformerConv(dim, dim // heads, heads=heads, edge_dim=dim) for _ in range(layers)])
        self.bns = nn.ModuleList([nn.BatchNorm1d(dim) for _ in range(layers - 1)])

    def forward(self, x, edge_index, edge_attr):
        for i, conv in enumerate(self.convs[:-1]):
            x = F.relu(self.bns[i](conv(x, edge_index, edge_attr)))
        return self.convs[-1](x, edge_index, edge_attr)


def concat(graphs):
    src, dst, et, nt, gid, ys = [], [], [], [], [], []
    off = 0
    for i, g in enumerate(graphs):
        src += [s + off for s in g["src"]]
        dst += [d + off for d in g["dst"]]
        et += g.get("etype", [0] * len(g["src"]))
        nt += g.get("ntype", [0] * g["n"])
        gid += [i] * g["n"]
        ys.append(g.get("label", 0.0))
        off += g["n"]
    return off, src, dst, et, nt, gid, ys


def timed(step, n_batches, warmup, steps, device):
    for i in range(n_batches + warmup):
        step(i)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    times = []
    for i in range(steps):
        t = time.perf_counter()
        step(i)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), min(times)


def bench_rgcn(path, device, steps, warmup):
    data = json.load(open(path))
    feat, hidden, rels = data["feat"], data["hidden"], data["relations"]
    batches = []
    for gs in data["batches"]:
        n, src, dst, et, nt, gid, ys = concat(gs)
        batches.append({
            "x": torch.randn(n, feat, device=device), "ntype": torch.tensor(nt, device=device),
            "edge_index": torch.tensor([src, dst], device=device), "edge_type": torch.tensor(et, device=device),
            "batch": torch.tensor(gid, device=device), "y": torch.tensor(ys, device=device),
        })
    model = Scorer(feat, hidden, rels).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)

    def step(i):
        b = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        loss = F.binary_cross_entropy_with_logits(model(b), b["y"])
        loss.backward()
        opt.step()

    med, mn = timed(step, len(batches), warmup, steps, device)
    return {"bench": "rgcn", "impl": "pyg", "device": device, "ms_per_step": med, "ms_min": mn}


def bench_gt(path, device, steps, warmup):
    data = json.load(open(path))
    dim = data["dim"]
    batches = []
    for gs in data["batches"]:
        n, src, dst, _, _, gid, _ = concat(gs)
        batches.append({
            "x": torch.randn(n, dim, device=device), "edge_attr": torch.randn(len(src), dim, device=device),
            "edge_index": torch.tensor([src, dst], device=device), "batch": torch.tensor(gid, device=device),
        })
    model = GraphTransformer(dim, data["layers"], data["heads"]).to(device).train()

    def step(i):
        b = batches[i % len(batches)]
        model.zero_grad(set_to_none=True)
        h = model(b["x"], b["edge_index"], b["edge_attr"])
        global_mean_pool(h, b["batch"]).square().mean().backward()

    med, mn = timed(step, len(batches), warmup, steps, device)
    return {"bench": "gt", "impl": "pyg", "device": device, "ms_per_step": med, "ms_min": mn}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rgcn")
    ap.add_argument("--gt")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    torch.manual_seed(0)
    if args.rgcn:
        print(json.dumps(bench_rgcn(args.rgcn, args.device, args.steps, args.warmup)), flush=True)
    if args.gt:
        print(json.dumps(bench_gt(args.gt, args.device, max(3, args.steps // 2), args.warmup)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
