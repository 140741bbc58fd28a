package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/proxy"
	"github.com/mcpcage/mcpcage/internal/scan"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// blockResultsFlag is `mcpcage run --block-results`: "" (the default) lets
// every result through; low, medium or high withholds results with a finding
// of that severity or higher.
var blockResultsFlag string

func init() {
	addRunExtension(runExtension{
		Order: 20,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&blockResultsFlag, "block-results", "", "replace a tool result that shows signs of hidden instructions of this `severity` or higher (low, medium, high) with an error; default: report them and pass the result on")
		},
		Check: func() error {
			_, err := blockSeverity()
			return err
		},
		Policy: newResultScanPolicy,
	})
	auditFindings = resultFindings.count
}

// resultScanPolicy scans what tools return (and what prompts/get and
// resources/read return): findings go to stderr and, through
// auditFindings, into the call's audit record. The result passes unchanged
// unless --block-results asks otherwise.
type resultScanPolicy struct {
	rc    *RunContext
	block scan.Severity // 0: never block
}

func newResultScanPolicy(rc *RunContext) (proxy.Policy, error) {
	sev, err := blockSeverity()
	if err != nil {
		return nil, err
	}
	return &resultScanPolicy{rc: rc, block: sev}, nil
}

// blockSeverity is --block-results as a severity; 0 when unset.
func blockSeverity() (scan.Severity, error) {
	if blockResultsFlag == "" {
		return 0, nil
	}
	sev, err := scan.ParseSeverity(blockResultsFlag)
	if err != nil {
		return 0, &ExitError{Code: exitUsage, Err: fmt.Errorf("--block-results %q: give low, medium or high", blockResultsFlag)}
	}
	return sev, nil
}

var scannedMethods = map[string]string{"tools/call": "tool", "prompts/get": "prompt", "resources/read": "resource"}

func (p *resultScanPolicy) Inspect(ctx context.Context, s *proxy.Session, ev *proxy.Event) proxy.Verdict {
	m := ev.Msg
	kind, ok := scannedMethods[ev.Method]
	if ev.Dir != proxy.ServerToClient || m.Kind != jsonrpc.KindResponse || !ok || m.Result == nil {
		return proxy.Verdict{Action: proxy.Forward}
	}
	fs := scan.Result(m.Result)
	resultFindings.put(m.Result, len(fs))
	if len(fs) == 0 {
		return proxy.Verdict{Action: proxy.Forward}
	}
	what := kind + " " + strconv.Quote(untrusted.Line(requestedName(ev.Method, ev.Params)))
	blocked := ev.Method == "tools/call" && p.block != 0 && scan.Max(fs) >= p.block
	var b strings.Builder
	outcome := "passed on"
	if blocked {
		outcome = "withheld (--block-results " + strings.ToLower(p.block.String()) + ")"
	}
	untrusted.Fprintf(&b, "mcpcage: %s of %q returned %s; the result was %s:\n", what, p.rc.Name, signs(fs), outcome)
	_ = scan.Format(&b, "    ", fs)
	_, _ = p.rc.IO.ErrOut.Write([]byte(b.String()))
	if !blocked {
		return proxy.Verdict{Action: proxy.Forward}
	}
	result := withheldResult(what, fs)
	resultFindings.put(result, len(fs))
	return proxy.Verdict{Action: proxy.Replace, Message: jsonrpc.NewResponse(m.ID, result)}
}

func signs(fs []scan.Finding) string {
	n, h := len(fs), scan.Count(fs, scan.High)
	s := fmt.Sprintf("%d sign(s) of hidden instructions", n)
	if h > 0 {
		s += fmt.Sprintf(" (%d high-severity)", h)
	}
	return s
}

// withheldResult is the isError result that stands in for a withheld one. It
// names the rules only: the snippets stay out of the model's context.
func withheldResult(what string, fs []scan.Finding) []byte {
	seen := map[string]bool{}
	var ids []string
	for _, f := range fs {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			ids = append(ids, f.Rule)
		}
	}
	sort.Strings(ids)
	text := fmt.Sprintf("mcpcage withheld the result of %s: it showed %s (%s). The person running mcpcage can see the details in its log.",
		what, signs(fs), strings.Join(ids, ", "))
	b, _ := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": text}},
		"isError": true,
	})
	return b
}

// requestedName is the tool or prompt name, or the resource URI, of a request.
func requestedName(method string, params []byte) string {
	var v struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	_ = json.Unmarshal(params, &v)
	if method == "resources/read" {
		return v.URI
	}
	return v.Name
}

// resultFindings remembers the finding counts of the results this policy
// just scanned, keyed by their bytes, so the audit record of a call gets the
// count without a second scan, and a withheld result's record keeps the count
// of what was withheld.
var resultFindings = &findingCache{m: map[string]int{}}

type findingCache struct {
	mu    sync.Mutex
	m     map[string]int
	order []string
}

const findingCacheSize = 64

func cacheKey(result []byte) string {
	sum := sha256.Sum256(bytes.TrimSpace(result))
	return string(sum[:])
}

func (c *findingCache) put(result []byte, n int) {
	k := cacheKey(result)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok {
		c.order = append(c.order, k)
		if len(c.order) > findingCacheSize {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.m[k] = n
}

func (c *findingCache) count(result []byte) int {
	k := cacheKey(result)
	c.mu.Lock()
	n, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return n
	}
	return len(scan.Result(result))
}
