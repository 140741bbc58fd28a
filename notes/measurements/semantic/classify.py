"""A logistic regression on sentence embeddings, one sentence of a tool
labelled positive per attack (multiple-instance relabelling), trained on the
corpus and the families parts written before each fresh part; prints each
fresh part caught by the model, by the rules (/tmp/rules.json: each record
scanned alone with `mcpcage scan --json`, worst severity) and by either.
Usage: python3 classify.py C QUANTILE (Debian: python3-sklearn)."""
import json,numpy as np,collections,sys
from sklearn.linear_model import LogisticRegression
recs=json.load(open("/tmp/recs.json")); E=json.load(open("/tmp/emb.json")); R=json.load(open("/tmp/rules.json"))
for r in recs: r["rule"]=R.get(r["id"],"none")
parts=["written","heldout"]+[f"fresh{i}" for i in range(1,13)]
def X(r): return np.array([E[s] for s in r["sents"]]) if r["sents"] else np.zeros((0,512))
def train(tr,C=1.0,iters=4):
    xs=[];ys=[];bag=[]
    for bi,r in enumerate(tr):
        x=X(r)
        if len(x)==0: continue
        xs.append(x); ys+= [1 if r["label"]>=1 else 0]*len(x); bag+=[bi]*len(x)
    Xa=np.vstack(xs); y=np.array(ys); bag=np.array(bag); pos=y==1
    w=np.ones(len(y))
    for it in range(iters):
        m=LogisticRegression(C=C,max_iter=2000,class_weight="balanced"); m.fit(Xa,y)
        p=m.predict_proba(Xa)[:,1]
        # mi relabel: in positive bags, sentence positive if p>0.5, and at least the max
        ny=y.copy()
        for b in np.unique(bag[pos]):
            idx=np.where(bag==b)[0]
            lab=(p[idx]>0.5).astype(int)
            lab[np.argmax(p[idx])]=1
            ny[idx]=lab
        y=ny
    return m
def score(m,r):
    x=X(r)
    return float(m.predict_proba(x)[:,1].max()) if len(x) else 0.0
C=float(sys.argv[1]) if len(sys.argv)>1 else 1.0
corpus=[r for r in recs if r["src"]=="corpus"]
ben=[r for r in corpus if r["label"]==0]
# benign CV grouped by source
groups=sorted(set(r["group"] for r in ben)); rng=np.random.RandomState(1); rng.shuffle(groups)
fold={g:i%5 for i,g in enumerate(groups)}
fam=[r for r in recs if r["src"]!="corpus"]
mal=[r for r in corpus if r["label"]>=1]
def thr_from(m,tr,q):
    s=[score(m,r) for r in tr if r["label"]==0]
    return float(np.quantile(s,q))
Q=float(sys.argv[2]) if len(sys.argv)>2 else 0.99
# benign FP by grouped CV (train with all families + mal + other folds)
fp=[];fpr=[];allb=0
for f in range(5):
    tr=mal+fam+[r for r in ben if fold[r["group"]]!=f]
    m=train(tr,C); t=thr_from(m,tr,Q)
    te=[r for r in ben if fold[r["group"]]==f]
    for r in te:
        s=score(m,r); allb+=1
        if s>t: fp.append(r["id"])
print(f"C={C} Q={Q} benign corpus model-flag {len(fp)}/{allb} = {100*len(fp)/allb:.1f}%")
rul=sum(1 for r in ben if r["rule"] in("medium","high"))
both=sum(1 for r in ben if r["rule"] in("medium","high") or r["id"] in fp)
print(f"  rules any {rul}/{allb}={100*rul/allb:.1f}%  union {both}/{allb}={100*both/allb:.1f}%")
for k in range(6,14):
    p=parts[k]
    tr=mal+ben+[r for r in fam if parts.index(r["src"])<k]
    m=train(tr,C); t=thr_from(m,tr,Q)
    te=[r for r in fam if r["src"]==p]
    A=[r for r in te if r["label"]==1]; B=[r for r in te if r["label"]==0]
    ma=[r for r in A if score(m,r)>t]; ra=[r for r in A if r["rule"] in("medium","high")]
    ua=[r for r in A if r in ma or r in ra]
    mb=[r for r in B if score(m,r)>t]; ub=[r for r in B if r in mb or r["rule"] in("medium","high")]
    print(f"{p:8s} thr={t:.2f} attacks model {100*len(ma)/len(A):5.1f} rules {100*len(ra)/len(A):5.1f} union {100*len(ua)/len(A):5.1f} | lookalikes model {len(mb)}/{len(B)} union-any {len(ub)}/{len(B)}")
    if p=="fresh12":
        for r in A:
            if r not in ua: print("   miss",r["name"],r["cls"])
