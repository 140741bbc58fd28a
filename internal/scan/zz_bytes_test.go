package scan

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"testing"
)

func TestZZBytes(t *testing.T) {
	f, _ := os.Open("../../../shared/corpus/benign.jsonl")
	bs := bufio.NewScanner(f)
	bs.Buffer(make([]byte, 1<<20), 1<<24)
	var tools []json.RawMessage
	for bs.Scan() {
		var r struct{ Tool json.RawMessage }
		json.Unmarshal(bs.Bytes(), &r)
		tools = append(tools, r.Tool)
	}
	per := map[string]int{}
	total := 0
	regexInput = func(r *Rule, pi, n int) { per[fmt.Sprintf("%s#%d", r.ID, pi)] += n; total += n }
	Tools(tools)
	regexInput = nil
	var ks []string
	for k := range per {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return per[ks[i]] > per[ks[j]] })
	fmt.Println("total bytes through regexes:", total)
	for _, k := range ks[:12] {
		fmt.Println(k, per[k])
	}
}
