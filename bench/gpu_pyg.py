#!/usr/bin/env python3
"""PyTorch Geometric twin of the GPU job's GNN steps (bench/gpujob, bench/gpu.sh): the
CrossAug scorer with PyG RGCNConv (full training step with Adam), G-Retriever's
GraphTransformer with PyG TransformerConv (forward + backward), and a G-Retriever
training step (GraphTransformer encoder, MLP projector, graph token through a frozen
transformers causal LM, AdamW), on the batches and examples `gpujob inputs` wrote.
Prints one JSON line per benchmark.

Usage: gpu_pyg.py [--rgcn RGCN_BATCHES.json] [--gt GT_BATCHES.json]
                  [--gretriever GRETRIEVER.json --lm LM_DIR] [--steps 20] [--device cuda]
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


def bench_gretriever(path, lm_dir, device, warmup):
    """G-Retriever's training step (src/model/graph_llm.py) on the tiny LM folder: the
    graph token after BOS, then the textualised subgraph (truncated), the question and
    the answer + EOS; loss on the answer tokens only; clip 0.1; AdamW."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    data = json.load(open(path))
    tok = AutoTokenizer.from_pretrained(lm_dir)
    llm = AutoModelForCausalLM.from_pretrained(lm_dir, dtype=torch.float32).to(device)
    for p in llm.parameters():
        p.requires_grad_(False)
    embed = llm.get_input_embeddings()
    dim, hid = data["dim"], llm.config.hidden_size
    gnn = GraphTransformer(dim, data["gt_layers"], data["gt_heads"]).to(device).train()
    proj = nn.Sequential(nn.Linear(dim, data["projector_hidden"]), nn.Sigmoid(),
                         nn.Linear(data["projector_hidden"], hid)).to(device)
    params = list(gnn.parameters()) + list(proj.parameters())
    opt = torch.optim.AdamW(params, lr=data["lr"], weight_decay=data["weight_decay"])
    bos = [tok.bos_token_id if tok.bos_token_id is not None else llm.config.bos_token_id]
    bos = [b for b in bos if b is not None]
    eos = tok.eos_token_id if tok.eos_token_id is not None else llm.config.eos_token_id
    eos = eos[0] if isinstance(eos, list) else eos
    batches = []
    exs = data["train"]
    for i in range(0, len(exs), data["batch"]):
        chunk = exs[i:i + data["batch"]]
        n, src, dst, _, _, gid, _ = concat(chunk)
        seqs = []
        for e in chunk:
            text = tok(e["text"], add_special_tokens=False)["input_ids"][:data["max_text_tokens"]]
            q = tok(data["question"] % e["question"], add_special_tokens=False)["input_ids"]
            a = tok(e["answer"], add_special_tokens=False)["input_ids"] + ([eos] if eos is not None else [])
            seqs.append((text + q, a))
        batches.append({
            "x": torch.randn(n, dim, device=device), "edge_attr": torch.randn(len(src), dim, device=device),
            "edge_index": torch.tensor([src, dst], device=device), "batch": torch.tensor(gid, device=device),
            "seqs": seqs,
        })

    def step(i):
        b = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        g = proj(global_mean_pool(gnn(b["x"], b["edge_index"], b["edge_attr"]), b["batch"]))
        rows, labels = [], []
        for k, (prompt, ans) in enumerate(b["seqs"]):
            ids = torch.tensor(bos + prompt + ans, device=device)
            e = embed(ids)
            nb = len(bos)
            rows.append(torch.cat([e[:nb], g[k:k + 1], e[nb:]]))
            labels.append([-100] * (nb + 1 + len(prompt)) + ans)
        t = max(r.shape[0] for r in rows)
        x = torch.zeros(len(rows), t, hid, device=device)
        mask = torch.zeros(len(rows), t, dtype=torch.long, device=device)
        y = torch.full((len(rows), t), -100, dtype=torch.long, device=device)
        for k, r in enumerate(rows):
            x[k, :r.shape[0]] = r
            mask[k, :r.shape[0]] = 1
            y[k, :r.shape[0]] = torch.tensor(labels[k], device=device)
        loss = llm(inputs_embeds=x, attention_mask=mask, labels=y).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 0.1)
        opt.step()

    med, mn = timed(step, len(batches), warmup, max(len(batches), 4), device)
    return {"bench": "gretriever", "impl": "pytorch", "device": device, "lm": lm_dir, "ms_per_step": med, "ms_min": mn}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rgcn")
    ap.add_argument("--gt")
    ap.add_argument("--gretriever")
    ap.add_argument("--lm")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    torch.manual_seed(0)
    if args.rgcn:
        print(json.dumps(bench_rgcn(args.rgcn, args.device, args.steps, args.warmup)), flush=True)
    if args.gt:
        print(json.dumps(bench_gt(args.gt, args.device, max(3, args.steps // 2), args.warmup)), flush=True)
    if args.gretriever:
        if not args.lm:
            ap.error("--gretriever needs --lm LM_DIR")
        print(json.dumps(bench_gretriever(args.gretriever, args.lm, args.device, args.warmup)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
