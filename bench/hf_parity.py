#!/usr/bin/env python3
"""Hugging Face parity of graphloom's decoder LM: loads the model folder with
transformers in the dtype `gpujob lm -dtype` used (float32 or bfloat16, as its JSON
says), runs the prompts `gpujob lm` wrote to --go FILE, and compares the logits of
every position (largest absolute difference, and relative to the largest |logit|) and
8 greedy tokens after each prompt (no EOS stop) with graphloom's. Prints one JSON
line; exits 1 when the logits differ by more than --tol (absolute in float32,
relative in bfloat16) or a greedy token differs.

Usage: hf_parity.py --dir LM_DIR --go lm_go.json [--tol 1e-3] [--device cuda]
"""
import argparse
import json
import sys

import torch
from transformers import AutoModelForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--go", required=True)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    go = json.load(open(args.go))
    dtype = go.get("dtype", "float32")
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    model = AutoModelForCausalLM.from_pretrained(args.dir, dtype=torch_dtype, attn_implementation="eager").to(args.device).eval()
    ids = torch.tensor(go["ids"], device=args.device)
    with torch.no_grad():
        logits = model(ids).logits.float().cpu()
        diff = (logits - torch.tensor(go["logits"], dtype=torch.float32)).abs().max().item()
        rel = diff / max(1.0, logits.abs().max().item())
        seq = ids
        for _ in range(len(go["greedy"][0])):
            nxt = model(seq).logits[:, -1].argmax(-1, keepdim=True)
            seq = torch.cat([seq, nxt], 1)
        greedy = seq[:, ids.shape[1]:].cpu().tolist()
    ok = (rel if dtype == "bfloat16" else diff) <= args.tol and greedy == go["greedy"]
    print(json.dumps({"bench": "hf_parity", "impl": "transformers", "device": args.device, "lm": args.dir, "dtype": dtype,
                      "max_abs_logit_diff": diff, "max_rel_logit_diff": rel, "greedy_match": greedy == go["greedy"],
                      "greedy": greedy, "ok": ok}),
          flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
