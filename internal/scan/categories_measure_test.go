//go:build measure

package scan

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The measurement of notes/measurements/categories: every sentence the
// frames read, with the lexicon's categories it holds, for each tool of the
// families batch and of the corpus, with the label and the rules' verdict.
// Run from the repository's root with ../shared beside it:
//
//	go test -tags measure -run TestSentenceCategories ./internal/scan -args -out /tmp/sents.jsonl

var (
	sentOut    = flag.String("out", "", "where the sentences' categories go (JSON Lines)")
	sentCorpus = flag.String("corpus", "../../../shared/corpus", "the corpus folder")
)

type sentRecord struct {
	Part  string   `json:"part"`  // a families part ("fresh20") or a corpus file
	Label int      `json:"label"` // 1: an attack (core poisoning), 0: honest
	Class string   `json:"class"`
	Group string   `json:"group"`    // the server, for cross-validation by server
	Sev   int      `json:"severity"` // the rules' worst finding (0: none, 2: MEDIUM)
	Cats  []uint64 `json:"cats"`     // per sentence: its categories, as bits of names
	Sents []string `json:"sents"`
}

func TestSentenceCategories(t *testing.T) {
	if *sentOut == "" {
		t.Fatal("-out is required")
	}
	f, err := os.Create(*sentOut)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	set := loadedRules()
	one := func(rec sentRecord, server string, tool json.RawMessage) {
		sc := newScannerWith(set)
		sc.onSentence = func(cat catMask, sent []byte) {
			rec.Cats = append(rec.Cats, uint64(cat))
			rec.Sents = append(rec.Sents, string(sent))
		}
		rec.Sev = int(Max(sc.toolsFrom(Origin{Package: server}, []json.RawMessage{tool}, nil)[0]))
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob("testdata/families/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatal("no families parts", err)
	}
	for _, path := range files {
		kind, part, _ := strings.Cut(strings.TrimSuffix(filepath.Base(path), ".jsonl"), "-")
		for _, a := range readJSONL[familyAttack](t, path) {
			label := 0
			if kind == "attacks" {
				label = 1
			}
			one(sentRecord{Part: part, Label: label, Class: a.Class, Group: part + "/" + a.Server}, a.Server, a.Tool)
		}
	}
	type corpusRecord struct {
		Label    string          `json:"label"`
		Category string          `json:"category"`
		Core     bool            `json:"core_poisoning"`
		Server   string          `json:"server"`
		Source   string          `json:"source"`
		Tool     json.RawMessage `json:"tool"`
	}
	for _, name := range []string{"malicious.jsonl", "benign.jsonl", "benign_tricky_strings.jsonl"} {
		for _, c := range readJSONL[corpusRecord](t, filepath.Join(*sentCorpus, name)) {
			if c.Label == "malicious" && !c.Core {
				continue
			}
			label := 0
			if c.Label == "malicious" {
				label = 1
			}
			group := c.Server
			if group == "" {
				group, _, _ = strings.Cut(c.Source, "@")
			}
			one(sentRecord{Part: "corpus/" + name, Label: label, Class: c.Category, Group: group}, c.Server, c.Tool)
		}
	}
	names, err := json.Marshal(set.lex.names)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimSuffix(*sentOut, ".jsonl")+".names.json", names, 0o644); err != nil {
		t.Fatal(err)
	}
}
