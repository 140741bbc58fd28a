package pin

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/launch"
)

func TestFileName(t *testing.T) {
	for name, want := range map[string]string{
		"demo-notes":              "demo-notes.json",
		"@modelcontextprotocol/x": "%40modelcontextprotocol%2Fx.json",
		"_40modelcontextprotocol": "_40modelcontextprotocol.json",
		"..":                      "%2E..json",
		"a.b":                     "a.b.json",
		"../../etc/passwd":        "%2E.%2F..%2Fetc%2Fpasswd.json",
		"sp ace%":                 "sp%20ace%25.json",
		"\u200bx":                 "%E2%80%8Bx.json",
	} {
		got, err := FileName(name)
		if err != nil || got != want {
			t.Errorf("FileName(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := FileName(""); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := FileName(strings.Repeat("x", 300)); err == nil {
		t.Error("overlong name accepted")
	}
}

// The format is documented in doc.go; testdata/good_v1.json is its vector:
// Marshal must write exactly those bytes.
func TestMarshalVector(t *testing.T) {
	want, err := os.ReadFile("testdata/good_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal is not byte for byte the documented format:\n%s", got)
	}
	ch, err := Changes(f)
	if err != nil || len(ch) != 2 {
		t.Fatalf("Changes = %v, %v; want 2", ch, err)
	}
	if ch[0].Key != "add_note" || ch[0].Op != Changed || strings.Join(ch[0].Fields, ",") != "description" {
		t.Errorf("change 0: %+v", ch[0])
	}
	if ch[1].Key != "list_notes" || ch[1].Op != Removed {
		t.Errorf("change 1: %+v", ch[1])
	}
}

func TestParseRejects(t *testing.T) {
	dir, _ := filepath.Glob("testdata/fail_*.json")
	if len(dir) == 0 {
		t.Fatal("no fail_ vectors")
	}
	for _, p := range dir {
		b, _ := os.ReadFile(p)
		if _, err := Parse(b); err == nil {
			t.Errorf("%s: accepted", p)
		} else {
			t.Logf("%s: %v", filepath.Base(p), err)
		}
	}
}

func item(s string) jsontext.Value { return jsontext.Value(s) }

// Two sessions of one server update the same pin file at once; the lock keeps
// every write.
func TestUpdateConcurrent(t *testing.T) {
	st := Store{Dir: t.TempDir()}
	var wg sync.WaitGroup
	const n = 16
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := st.Update("srv", func(f *File) (bool, error) {
				if f.Approved == nil {
					f.Approved = &Snapshot{Launch: launch.Launch{Kind: "process"}}
				}
				f.Approved.Tools = append(f.Approved.Tools, item(fmt.Sprintf(`{"name":"t%02d"}`, i)))
				return true, nil
			})
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := st.Load("srv")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Approved.Tools) != n {
		t.Fatalf("%d tools survived, want %d", len(f.Approved.Tools), n)
	}
	left, _ := filepath.Glob(filepath.Join(st.Dir, ".pin-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	fi, _ := os.Stat(filepath.Join(st.Dir, "srv.json"))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("pin file mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestApproveAndHash(t *testing.T) {
	f := &File{Format: Format, Server: "s",
		Approved: &Snapshot{Tools: []jsontext.Value{item(`{"name":"a","description":"x"}`)}},
		Pending:  &Snapshot{Tools: []jsontext.Value{item(`{"name":"a","description":"y"}`)}},
	}
	h1, err := PendingHash(f)
	if err != nil || len(h1) != 16 {
		t.Fatal(h1, err)
	}
	// Same definitions, another order of members: same hash.
	g := *f
	g.Pending = &Snapshot{Tools: []jsontext.Value{item(`{"description":"y","name":"a"}`)}}
	if h2, _ := PendingHash(&g); h2 != h1 {
		t.Fatalf("hash depends on member order: %s %s", h1, h2)
	}
	g.Pending = &Snapshot{Tools: []jsontext.Value{item(`{"name":"a","description":"z"}`)}}
	if h3, _ := PendingHash(&g); h3 == h1 {
		t.Fatal("hash ignores the definition")
	}
	Approve(f, time.Unix(0, 0))
	if f.Pending != nil || string(f.Approved.Tools[0]) != `{"name":"a","description":"y"}` {
		t.Fatalf("approve: %+v", f.Approved)
	}
}

func TestCompareDuplicateRefused(t *testing.T) {
	_, err := Compare(Tools, nil, []jsontext.Value{item(`{"name":"a"}`), item(`{"name":"a","description":"evil"}`)})
	if err == nil || !strings.Contains(err.Error(), `tool "a" is listed twice`) {
		t.Fatalf("err = %v", err)
	}
}
