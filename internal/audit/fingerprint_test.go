package audit

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestFingerprintBuffersShareNothing: Fingerprint canonicalizes in buffers
// it keeps between calls; calls at once, of arguments of every size and
// of arguments that are not JSON, each get what a call alone gets.
func TestFingerprintBuffersShareNothing(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	var args [][]byte
	for i := range 40 {
		args = append(args, fmt.Appendf(nil, `{"z":%d, "a":%q}`, i, strings.Repeat("x", i*997)))
		args = append(args, fmt.Appendf(nil, `{"a":%q,"z":%d}`, strings.Repeat("x", i*997), i))
		args = append(args, fmt.Appendf(nil, `{"a": not json %d`, i))
	}
	want := make([]string, len(args))
	for i, a := range args {
		want[i] = Fingerprint(key, "srv", "tool", a)
	}
	for i := 0; i < len(args); i += 3 {
		if want[i] != want[i+1] {
			t.Fatalf("the same arguments in another order: %s and %s", want[i], want[i+1])
		}
		if want[i] == want[i+2] {
			t.Fatalf("arguments that are not JSON got the fingerprint of %s", args[i])
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for r := range 20 {
				for k := range args {
					i := (k + g*7 + r) % len(args)
					if got := Fingerprint(key, "srv", "tool", args[i]); got != want[i] {
						t.Errorf("arguments %d: %s, alone %s", i, got, want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
