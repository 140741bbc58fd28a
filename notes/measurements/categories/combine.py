"""Would a learned combination of the lexicon's categories read new wording
better than the frames do? Reads the dump of TestSentenceCategories (the
categories of every sentence the frames read, per tool; see the test's
comment for the command), trains on every part but the test parts and
prints, per threshold: the test parts' attacks caught by the model alone
and by the model or the rules (MEDIUM or above), their look-alikes flagged,
and the real benign tools of the corpus flagged (each scored by a model
trained without its server: 5 folds grouped by server).

Models: "tool" (logistic regression, a tool's features are the pairs of
categories that share one of its sentences and the categories of its text),
"mil" (logistic regression per sentence, multiple-instance: an attack's
sentences that score low are relabelled honest, a tool scores its best
sentence), "gb" (gradient-boosted trees on the tool features and the
rules' verdict). A tool's length is left out on purpose: the written
attacks are shorter than the real tools, and a model given the number of
sentences learns that, which an attacker undoes with a longer text.

Usage: python3 combine.py DUMP.jsonl MODEL [TEST_PARTS] (Debian: python3-sklearn)."""
import collections
import json
import sys

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

dump, kind = sys.argv[1], sys.argv[2]
test_parts = set((sys.argv[3] if len(sys.argv) > 3 else "fresh20,fresh21").split(","))
names = json.load(open(dump[: -len(".jsonl")] + ".names.json"))
K = len(names)
recs = [json.loads(line) for line in open(dump)]
pairs = {(i, j): n for n, (i, j) in enumerate((i, j) for i in range(K) for j in range(i, K))}
BENIGN = "corpus/benign.jsonl"


def bits(m):
    return [i for i in range(K) if m >> i & 1]


def sentence_features(m):
    v = np.zeros(len(pairs), dtype=np.float32)
    b = bits(m)
    for x in range(len(b)):
        for y in range(x, len(b)):
            v[pairs[(b[x], b[y])]] = 1
    return v


def tool_features(r):
    v = np.zeros(len(pairs) + K + 1, dtype=np.float32)
    text = 0
    for m in r["cats"]:
        text |= m
        v[: len(pairs)] = np.maximum(v[: len(pairs)], sentence_features(m))
    for i in bits(text):
        v[len(pairs) + i] = 1
    v[-1] = r["severity"] if kind == "gb" else 0
    return v


for r in recs:
    r["x"] = tool_features(r)
    cats = sorted(set(r["cats"])) or [0]
    r["X"] = np.array([sentence_features(m) for m in cats])


def fit(train):
    if kind == "mil":
        xs, ys, bag = [], [], []
        for bi, r in enumerate(train):
            xs.append(r["X"])
            ys += [r["label"]] * len(r["X"])
            bag += [bi] * len(r["X"])
        X, y, bag = np.vstack(xs), np.array(ys), np.array(bag)
        posbags = np.unique(bag[y == 1])
        for _ in range(4):
            m = LogisticRegression(C=0.3, max_iter=3000, class_weight="balanced").fit(X, y)
            p = m.predict_proba(X)[:, 1]
            for b in posbags:
                idx = np.where(bag == b)[0]
                lab = (p[idx] > 0.5).astype(int)
                lab[np.argmax(p[idx])] = 1
                y[idx] = lab
        return m
    X = np.array([r["x"] for r in train])
    y = np.array([r["label"] for r in train])
    if kind == "gb":
        m = HistGradientBoostingClassifier(max_iter=300, learning_rate=0.05, max_leaf_nodes=15, l2_regularization=1.0, random_state=0)
    else:
        m = LogisticRegression(C=0.3, max_iter=5000, class_weight="balanced")
    return m.fit(X, y)


def score(m, r):
    if kind == "mil":
        return float(m.predict_proba(r["X"])[:, 1].max())
    return float(m.predict_proba(r["x"][None, :])[0, 1])


train = [r for r in recs if r["part"] not in test_parts]
test = [r for r in recs if r["part"] in test_parts]
model = fit(train)
for r in test:
    r["p"] = score(model, r)
benign = [r for r in recs if r["part"] == BENIGN]
groups = sorted(set(r["group"] for r in benign))
np.random.RandomState(1).shuffle(groups)
for k in range(5):
    fold = set(groups[k::5])
    m = fit([r for r in train if not (r["part"] == BENIGN and r["group"] in fold)])
    for r in benign:
        if r["group"] in fold:
            r["p"] = score(m, r)

attacks = [r for r in test if r["label"] == 1]
looks = [r for r in test if r["label"] == 0]
ruled = lambda r: r["severity"] >= 2
pct = lambda xs: f"{100 * np.mean(xs):.1f} %"
print(f"model {kind}, test parts {','.join(sorted(test_parts))}: {len(attacks)} attacks, {len(looks)} look-alikes; {len(benign)} real benign tools")
print(f"rules alone: attacks {pct([ruled(r) for r in attacks])}, look-alikes {sum(map(ruled, looks))}, real benign {pct([ruled(r) for r in benign])}")
print("| threshold | attacks, model | attacks, model or rules | look-alikes flagged, model or rules | real benign flagged, model | model or rules |")
print("|---|---|---|---|---|---|")
for thr in (0.3, 0.5, 0.7, 0.9, 0.95):
    hit = lambda r: r["p"] >= thr
    print(f"| {thr} | {pct([hit(r) for r in attacks])} | {pct([hit(r) or ruled(r) for r in attacks])} | {sum(hit(r) or ruled(r) for r in looks)} of {len(looks)} | {pct([hit(r) for r in benign])} | {pct([hit(r) or ruled(r) for r in benign])} |")
    per = collections.Counter((r["class"], hit(r) or ruled(r)) for r in attacks)
    print("|   | " + ", ".join(f"{c} {per[(c, True)]}/{per[(c, True)] + per[(c, False)]}" for c in sorted({r['class'] for r in attacks})) + " | | | | |")
