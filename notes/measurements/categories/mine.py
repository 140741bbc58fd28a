"""Frames mined instead of written: every set of 2 to ORDER categories that
shares a sentence in at least MIN_ATTACKS attacks of the training parts and
in no honest tool of them becomes a frame; measured like combine.py (test
parts fresh20 and fresh21; real benign tools by 5 folds grouped by server,
each fold's frames mined without its servers).
Usage: python3 mine.py DUMP.jsonl MIN_ATTACKS ORDER."""
import collections
import itertools
import json
import sys

import numpy as np

dump, minatt, order = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names = json.load(open(dump[: -len(".jsonl")] + ".names.json"))
K = len(names)
recs = [json.loads(line) for line in open(dump)]
test_parts = {"fresh20", "fresh21"}
BENIGN = "corpus/benign.jsonl"


def combos(m):
    b = [i for i in range(K) if m >> i & 1]
    return {c for k in range(2, order + 1) for c in itertools.combinations(b, k)}


for r in recs:
    r["cs"] = set().union(*(combos(m) for m in r["cats"])) if r["cats"] else set()


def mine(train):
    att, ben = collections.Counter(), collections.Counter()
    for r in train:
        (att if r["label"] == 1 else ben).update(r["cs"])
    return {c for c, n in att.items() if n >= minatt and ben[c] == 0}


train = [r for r in recs if r["part"] not in test_parts]
attacks = [r for r in recs if r["part"] in test_parts and r["label"] == 1]
looks = [r for r in recs if r["part"] in test_parts and r["label"] == 0]
frames = mine(train)
benign = [r for r in recs if r["part"] == BENIGN]
groups = sorted(set(r["group"] for r in benign))
np.random.RandomState(1).shuffle(groups)
for k in range(5):
    fold = set(groups[k::5])
    fk = mine([r for r in train if not (r["part"] == BENIGN and r["group"] in fold)])
    for r in benign:
        if r["group"] in fold:
            r["mined"] = bool(r["cs"] & fk)
ruled = lambda r: r["severity"] >= 2
hit = lambda r: bool(r["cs"] & frames) or ruled(r)
pct = lambda xs: f"{100 * np.mean(xs):.1f} %"
print(f"{len(frames)} frames mined (at least {minatt} attacks, sets of 2 to {order} categories)")
print(f"fresh20+21, mined or rules: {pct([hit(r) for r in attacks])} (rules alone {pct([ruled(r) for r in attacks])}); look-alikes {sum(map(hit, looks))} of {len(looks)}")
print(f"real benign tools with a finding, mined or rules: {pct([r['mined'] or ruled(r) for r in benign])} (rules alone {pct([ruled(r) for r in benign])})")
