#!/usr/bin/env python3
"""Build a long-technical-document retrieval set from the Go toolchain's own docs.

The corpus is the Go specification, memory model and assembler guide (HTML stripped,
code blocks dropped), one document each, so `graphloom index` chunks them; questions are
150 sentences of 12-40 words with half their content words kept ("What about <kept
words>?" — the frame has no content word of its own: a first version asked "What does
the text say about …", and its constant "text" linked every question to an entity
named "text"), and the gold span is the sentence. It is a synthetic,
single-hop sentence-recall task: it checks that the graph retrievers do not lose to BM25
on long technical text (structure words, code identifiers, a hub like "Go"), not that
they answer real questions.

Usage: scripts/techset.py GOROOT/doc OUTDIR   (writes corpus.json and questions.json)
"""
import html
import json
import os
import random
import re
import sys

DOCS = {
    "go_spec.html": "The Go Programming Language Specification",
    "go_mem.html": "The Go Memory Model",
    "asm.html": "A Quick Guide to Go's Assembler",
}
STOP = set("a an the and or of to in on at by for from with as is was are were be been it its this that these "
           "those which who what when where why how not no than then there their they".split())


def main(src, out):
    random.seed(3)
    docs = []
    for name, title in DOCS.items():
        path = os.path.join(src, name)
        if not os.path.exists(path):
            continue
        t = open(path, encoding="utf-8").read()
        t = re.sub(r"<pre>.*?</pre>", " ", t, flags=re.S)
        t = html.unescape(re.sub(r"<[^>]+>", " ", t))
        docs.append({"title": title, "text": re.sub(r"\s+", " ", t).strip()})
    if not docs:
        sys.exit("techset: no Go docs under " + src)
    sents = [s for d in docs for s in re.split(r"(?<=[.!?])\s+", d["text"]) if 12 <= len(s.split()) <= 40]
    random.shuffle(sents)
    qs = []
    for s in sents[:150]:
        content = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*", s) if w.lower() not in STOP]
        keep = [w for w in content if random.random() < 0.5]
        if len(keep) >= 3:
            qs.append({"id": "t%d" % len(qs), "question": "What about " + " ".join(keep) + "?",
                       "answer": "-", "contexts": [s]})
    os.makedirs(out, exist_ok=True)
    json.dump(docs, open(os.path.join(out, "corpus.json"), "w"))
    json.dump(qs, open(os.path.join(out, "questions.json"), "w"))
    print("%d documents, %d questions -> %s" % (len(docs), len(qs), out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
