#!/usr/bin/env python3
"""torch.sparse twin of the GPU job's batched PPR step (gpujob ppr): power iteration
z <- (1-d)*s + d * A D^-1 z on the undirected weighted graph `gpujob inputs` wrote
(ppr_graph.json.gz), all reset vectors as one [N, B] dense matrix, on the GPU. Stops
when the L1 change / L1 norm is below the file's tolerance (or after 100 passes).
With --go FILE (gpujob ppr -out: float32 [B][N]; skipped if absent) it reports the largest difference of
the column-normalised scores.

Usage: gpu_ppr.py --graph ppr_graph.json.gz [--go ppr_go.f32] [--reps 5] [--device cuda]
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graph", required=True)
    ap.add_argument("--go")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    dev = args.device
    g = json.load(gzip.open(args.graph, "rt"))
    n, d, tol = g["n"], g["damping"], g["tol"]
    u, v = torch.tensor(g["u"], dtype=torch.long), torch.tensor(g["v"], dtype=torch.long)
    w = torch.tensor(g["w"], dtype=torch.float32)
    rows, cols, vals = torch.cat([u, v]), torch.cat([v, u]), torch.cat([w, w])
    strength = torch.zeros(n).index_add_(0, rows, vals)
    # M[v, u] = w(u, v) / strength(u): column-stochastic, M z spreads z along edges.
    m = torch.sparse_coo_tensor(torch.stack([cols, rows]), vals / strength[rows], (n, n)).coalesce().to_sparse_csr().to(dev)
    s = torch.zeros(n, len(g["resets"]))
    for q, r in enumerate(g["resets"]):
        s[:, q].index_add_(0, torch.tensor(r["idx"], dtype=torch.long), torch.tensor(r["val"], dtype=torch.float32))
    s = (s / s.sum(0, keepdim=True)).to(dev)

    def solve():
        z, it = s.clone(), 0
        for it in range(1, 101):
            nz = (1 - d) * s + d * torch.sparse.mm(m, z)
            done = ((nz - z).abs().sum(0) / nz.abs().sum(0)).max().item() < tol
            z = nz
            if done:
                break
        return z, it

    z, iters = solve()
    if dev.startswith("cuda"):
        torch.cuda.synchronize()
    times = []
    for _ in range(args.reps):
        t = time.perf_counter()
        z, iters = solve()
        if dev.startswith("cuda"):
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1000)
    med = statistics.median(times)
    rec = {"bench": "ppr", "impl": "torch.sparse", "device": dev, "n": n, "batch": s.shape[1],
           "ms_per_batch": med, "ms_per_query": med / s.shape[1], "ms_min": min(times), "iterations": iters}
    if args.go and os.path.exists(args.go):
        import array
        a = array.array("f")
        with open(args.go, "rb") as f:
            a.frombytes(f.read())
        if sys.byteorder != "little":
            a.byteswap()
        go = torch.tensor(a, dtype=torch.float32).reshape(s.shape[1], n).T
        go = go / go.sum(0, keepdim=True)
        ref = (z / z.sum(0, keepdim=True)).cpu()
        rec["max_abs_diff_vs_graphloom"] = (go - ref).abs().max().item()
    print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    sys.exit(main())
