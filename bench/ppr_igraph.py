#!/usr/bin/env python3
"""Time python-igraph's personalized PageRank (PRPACK) on the graph bench/ppr wrote.

Usage: ppr_igraph.py DIR

Reads DIR/graph.bin (edge list and reset vectors, see bench/ppr/main.go writeGraph),
DIR/graphloom.bin (graphloom's CPU batch results) and the damping from DIR/go.json, calls

    Graph.personalized_pagerank(vertices=None, directed=False, damping=D,
                                weights="weight", reset=r, implementation="prpack")

once per reset vector exactly as HippoRAG 2 does, and writes DIR/igraph.json with the
per-call times and the largest difference to graphloom's scores. Run it with the
interpreter that has python-igraph (Debian: /usr/bin/python3 after
`apt-get install python3-igraph`).
"""

import array
import json
import os
import statistics
import struct
import sys
import time

MAGIC = b"GLPPR001"


def read_graph(path):
    with open(path, "rb") as f:
        if f.read(8) != MAGIC:
            raise SystemExit(f"{path}: not a bench/ppr graph file")
        n, m, batch = struct.unpack("<qqq", f.read(24))

        def arr(code, count):
            a = array.array(code)
            a.fromfile(f, count)
            if sys.byteorder != "little":
                a.byteswap()
            return a

        u, v, w = arr("i", m), arr("i", m), arr("d", m)
        resets = [arr("d", n) for _ in range(batch)]
    return n, u, v, w, resets


def read_rows(path, rows, n):
    out = []
    with open(path, "rb") as f:
        for _ in range(rows):
            a = array.array("d")
            a.fromfile(f, n)
            if sys.byteorder != "little":
                a.byteswap()
            out.append(a)
    return out


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    d = sys.argv[1]
    with open(os.path.join(d, "go.json")) as f:
        damping = json.load(f)["Damping"]  # what bench/ppr used
    try:
        import igraph as ig
    except ImportError as e:
        json.dump({"skipped": f"python-igraph not importable: {e}"}, open(os.path.join(d, "igraph.json"), "w"))
        print(f"ppr_igraph: skipped: {e}", file=sys.stderr)
        return
    n, u, v, w, resets = read_graph(os.path.join(d, "graph.bin"))
    want = read_rows(os.path.join(d, "graphloom.bin"), len(resets), n)

    t0 = time.perf_counter()
    g = ig.Graph(n=n, edges=list(zip(u, v)), directed=False)
    g.es["weight"] = list(w)
    build_ms = (time.perf_counter() - t0) * 1e3
    reset_lists = [list(r) for r in resets]

    ppr = lambda r: g.personalized_pagerank(vertices=None, directed=False, damping=damping,
                                            weights="weight", reset=r, implementation="prpack")
    ppr(reset_lists[0])  # warm-up, not timed
    # One timed call per query...
    per_query, results = [], []
    for r in reset_lists:
        t = time.perf_counter()
        results.append(ppr(r))
        per_query.append((time.perf_counter() - t) * 1e3)
    # ... and all queries back to back, as a batch would be served.
    t = time.perf_counter()
    for r in reset_lists:
        ppr(r)
    loop_ms = (time.perf_counter() - t) * 1e3
    max_abs, max_l1, max_sum_err = 0.0, 0.0, 0.0
    for x, y in zip(results, want):
        diffs = [abs(a - b) for a, b in zip(x, y)]
        max_abs = max(max_abs, max(diffs))
        max_l1 = max(max_l1, sum(diffs))
        max_sum_err = max(max_sum_err, abs(sum(x) - 1))
    rep = {
        "version": ig.__version__,
        "build_ms": build_ms,
        "per_query_ms": per_query,
        "median_ms": statistics.median(per_query),
        "min_ms": min(per_query),
        "loop_per_query_ms": loop_ms / len(per_query),
        "max_abs_diff": max_abs,
        "max_l1_diff": max_l1,
        "max_sum_err": max_sum_err,
    }
    with open(os.path.join(d, "igraph.json"), "w") as f:
        json.dump(rep, f, indent=2)
    print(f"igraph {ig.__version__}: {rep['median_ms']:.1f} ms/query (median of {len(per_query)}), "
          f"max |x_igraph - x_graphloom| = {max_abs:.2e}", file=sys.stderr)


if __name__ == "__main__":
    main()
