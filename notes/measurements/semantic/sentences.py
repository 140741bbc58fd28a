"""Sentences of every tool of ../shared/corpus and of the families batch, for
embed.mjs and classify.py (notes/measurements/scan.md, "a sentence-embedding
model"). Run from the repository's root with ../shared beside it."""
import glob
import json
import os
import re


def sentences(tool):
    out = []
    for s in re.split(r'(?<=[.!?])\s+|\n+', tool.get("description") or ""):
        if len(s.strip()) >= 3:
            out.append(s.strip())
    props = (tool.get("inputSchema") or {}).get("properties") or {}
    if isinstance(props, dict):
        for k, v in props.items():
            if isinstance(v, dict) and isinstance(v.get("description"), str):
                out.append(f"{k}: {v['description'].strip()}")
    return out[:60]


recs = []
for name, label in (("malicious", None), ("benign", 0)):
    for line in open(f"../shared/corpus/{name}.jsonl"):
        d = json.loads(line)
        lab = label if label is not None else (1 if d.get("core_poisoning") else 2)
        recs.append(dict(src="corpus", id=d["id"], label=lab, group=d.get("source", "").split("@")[0], sents=sentences(d["tool"])))
for f in sorted(glob.glob("internal/scan/testdata/families/*.jsonl")):
    base = os.path.basename(f)[:-6]
    kind, part = base.split("-", 1)
    for i, line in enumerate(open(f)):
        d = json.loads(line)
        recs.append(dict(src=part, id=f"{base}-{i}", label=1 if kind == "attacks" else 0, cls=d.get("class", ""), group=part, sents=sentences(d["tool"]), name=d["tool"]["name"]))
json.dump(recs, open("/tmp/recs.json", "w"))
json.dump(sorted({s for r in recs for s in r["sents"]}), open("/tmp/uniq.json", "w"))
