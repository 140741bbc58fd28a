package cage

//lint:file-ignore SA1019 a profile may still carry the deprecated Syscall.Name; it is read so that no socket rule slips past it

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// admits reports whether rule r lets socket(domain, ...) through.
func admits(r *seccomp.Syscall, domain uint64) bool {
	if r.Action != specs.ActAllow || !(slices.Contains(r.Names, "socket") || r.Name == "socket") {
		return false
	}
	for _, a := range r.Args {
		if a.Index != 0 {
			continue
		}
		ok := map[specs.LinuxSeccompOperator]bool{
			specs.OpEqualTo: domain == a.Value, specs.OpNotEqual: domain != a.Value,
			specs.OpLessThan: domain < a.Value, specs.OpLessEqual: domain <= a.Value,
			specs.OpGreaterThan: domain > a.Value, specs.OpGreaterEqual: domain >= a.Value,
		}[a.Op]
		if !ok {
			return false
		}
	}
	return true
}

// TestSeccompProfileNoUnixSocket: the profile the cage sends lets no rule
// admit socket(AF_UNIX), nor socketcall or io_uring (which would create one
// out of seccomp's sight), and keeps every other domain and call the
// engine's default allows.
func TestSeccompProfileNoUnixSocket(t *testing.T) {
	js, err := SeccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	var got seccomp.Seccomp
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatal(err)
	}
	if got.DefaultAction != specs.ActErrno {
		t.Fatalf("default action %s: the refused calls would not fail with an error", got.DefaultAction)
	}
	allowed := func(p *seccomp.Seccomp, call string) bool {
		for _, r := range p.Syscalls {
			if r.Action == specs.ActAllow && slices.Contains(r.Names, call) {
				return true
			}
		}
		return false
	}
	for _, r := range got.Syscalls {
		if admits(r, unix.AF_UNIX) {
			t.Errorf("a rule admits socket(AF_UNIX): %+v", r)
		}
	}
	for _, call := range []string{"socketcall", "io_uring_setup", "io_uring_enter"} {
		if allowed(&got, call) {
			t.Errorf("%s is allowed", call)
		}
	}
	if !allowed(&got, "socketpair") {
		t.Error("socketpair is not allowed")
	}
	def := seccomp.DefaultProfile()
	for d := uint64(unix.AF_UNSPEC + 1); d < unix.AF_MAX; d++ { // AF_UNSPEC creates nothing
		if d == unix.AF_UNIX {
			continue
		}
		before, after := slices.ContainsFunc(def.Syscalls, func(r *seccomp.Syscall) bool { return admits(r, d) }),
			slices.ContainsFunc(got.Syscalls, func(r *seccomp.Syscall) bool { return admits(r, d) })
		if before != after {
			t.Errorf("domain %d: allowed by the default %v, by the cage %v", d, before, after)
		}
	}
	for _, r := range def.Syscalls {
		for _, n := range r.Names {
			if n != "socket" && n != "socketcall" && r.Action == specs.ActAllow && len(r.Args) == 0 && r.Includes == nil && !allowed(&got, n) {
				t.Errorf("%s lost", n)
			}
		}
	}
}
