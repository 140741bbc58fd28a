// Package installtest builds Python packages and serves them from a local
// index, for the tests of the uvx install phase (internal/install) and of
// `mcpcage run -- uvx` (cmd/mcpcage). No PyPI is needed: the wheels are made
// here, per the binary distribution format, and the index listens on an
// address of this machine that install containers reach (the Docker bridge).
package installtest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Wheel builds a pure-Python (py3-none-any) wheel of name and version holding
// files, with console scripts (name -> "module:function") and Requires-Dist
// lines. It returns the wheel's file name and bytes.
func Wheel(t testing.TB, name, version string, files, scripts map[string]string, requires ...string) (string, []byte) {
	t.Helper()
	dist := strings.ReplaceAll(name, "-", "_")
	info := dist + "-" + version + ".dist-info/"
	meta := "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"
	for _, r := range requires {
		meta += "Requires-Dist: " + r + "\n"
	}
	all := map[string]string{}
	for k, v := range files {
		all[k] = v
	}
	all[info+"METADATA"] = meta
	all[info+"WHEEL"] = "Wheel-Version: 1.0\nGenerator: mcpcage-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
	if len(scripts) > 0 {
		ep := "[console_scripts]\n"
		for k, v := range scripts {
			ep += k + " = " + v + "\n"
		}
		all[info+"entry_points.txt"] = ep
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	slices.Sort(names)
	var record strings.Builder
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(all[n]))
		sum := sha256.Sum256([]byte(all[n]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(sum[:]), len(all[n]))
	}
	record.WriteString(info + "RECORD,,\n")
	w, _ := zw.Create(info + "RECORD")
	w.Write([]byte(record.String()))
	zw.Close()
	return dist + "-" + version + "-py3-none-any.whl", buf.Bytes()
}

// Index is a PEP 503 simple index. Add files before the first request.
type Index struct {
	URL  string // ".../simple", for PIP_INDEX_URL
	Auth string // "user:password" the index requires, or ""

	mu       sync.Mutex
	files    map[string]map[string][]byte // project -> file name -> bytes
	requests []string
}

// StartIndex serves an index on addr (a host, e.g. the bridge gateway) until
// the test ends.
func StartIndex(t testing.TB, addr string) *Index {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	ix := &Index{URL: "http://" + ln.Addr().String() + "/simple", files: map[string]map[string][]byte{}}
	srv := &http.Server{Handler: http.HandlerFunc(ix.serve)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ix
}

// Host is the index's host:port, for PIP_TRUSTED_HOST.
func (ix *Index) Host() string {
	return strings.TrimSuffix(strings.TrimPrefix(ix.URL, "http://"), "/simple")
}

// Add makes file (a wheel or sdist file name) of project available.
func (ix *Index) Add(project, file string, b []byte) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.files[project] == nil {
		ix.files[project] = map[string][]byte{}
	}
	ix.files[project][file] = b
}

// Requested returns the paths asked for so far.
func (ix *Index) Requested() []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return append([]string(nil), ix.requests...)
}

func (ix *Index) serve(w http.ResponseWriter, r *http.Request) {
	ix.mu.Lock()
	ix.requests = append(ix.requests, r.URL.Path)
	auth := ix.Auth
	ix.mu.Unlock()
	if auth != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u+":"+p != auth {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	ix.mu.Lock()
	defer ix.mu.Unlock()
	switch {
	case len(parts) == 2 && parts[0] == "simple" && ix.files[parts[1]] != nil:
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
		for name, b := range ix.files[parts[1]] {
			sum := sha256.Sum256(b)
			fmt.Fprintf(w, "<a href=\"/files/%s/%s#sha256=%s\">%s</a><br>\n", parts[1], html.EscapeString(name), hex.EncodeToString(sum[:]), html.EscapeString(name))
		}
		fmt.Fprint(w, "</body></html>\n")
	case len(parts) == 3 && parts[0] == "files" && ix.files[parts[1]][parts[2]] != nil:
		w.Write(ix.files[parts[1]][parts[2]])
	default:
		http.NotFound(w, r)
	}
}
