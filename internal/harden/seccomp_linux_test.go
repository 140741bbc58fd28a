package harden

//lint:file-ignore SA1019 a profile may still carry the deprecated Syscall.Name; it is read so that no socket rule slips past it

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// cageSeccomp derives the cage's profile (seccomp.json) from the engine's
// default: the default with every way it lets socket(AF_UNIX) through taken
// out, and socketpair held to connected types (SeccompProfile says why).
func cageSeccomp() ([]byte, error) {
	p := seccomp.DefaultProfile()
	var rules []*seccomp.Syscall
	for _, r := range p.Syscalls {
		out, err := withoutUnixSockets(r)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			rules = append(rules, connectedSocketpairs(o)...)
		}
	}
	p.Syscalls = rules
	b, err := json.MarshalIndent(p, "", "\t")
	if err != nil {
		return nil, fmt.Errorf("cannot encode the seccomp profile: %v", err)
	}
	return append(b, '\n'), nil
}

// withoutUnixSockets returns rule r with every way it lets socket(AF_UNIX)
// or socketcall through taken out. A shape of socket rule it does not know
// is an error rather than a guess: a newer profile package must be looked at
// (TestSeccompProfileNoUnixSocket fails) before it is shipped.
func withoutUnixSockets(r *seccomp.Syscall) ([]*seccomp.Syscall, error) {
	names := r.Names
	if r.Name != "" {
		names = append(slices.Clone(names), r.Name)
	}
	if r.Action != specs.ActAllow || !(slices.Contains(names, "socket") || slices.Contains(names, "socketcall")) {
		return []*seccomp.Syscall{r}, nil
	}
	if len(names) > 1 || names[0] == "socketcall" {
		// A list that names socket among other calls allows it whatever
		// its arguments: the other calls keep the rule, socket gets one
		// of its own that leaves out AF_UNIX.
		if len(r.Args) > 0 {
			return nil, fmt.Errorf("seccomp profile: socket allowed with arguments in a list of %d calls", len(names))
		}
		keep := *r
		keep.Name = ""
		keep.Names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "socket" || n == "socketcall" })
		var out []*seccomp.Syscall
		if len(keep.Names) > 0 {
			out = append(out, &keep)
		}
		if slices.Contains(names, "socket") {
			out = append(out, socketRule(r, unix.AF_UNIX, specs.OpNotEqual))
		}
		return out, nil
	}
	// A rule of socket's own, as the profile package writes them: one
	// comparison of the domain (argument 0).
	if len(r.Args) != 1 || r.Args[0].Index != 0 {
		return nil, fmt.Errorf("seccomp profile: a socket rule of an unknown shape (%d arguments)", len(r.Args))
	}
	a := r.Args[0]
	switch a.Op {
	case specs.OpEqualTo:
		if a.Value == unix.AF_UNIX {
			return nil, nil
		}
		return []*seccomp.Syscall{r}, nil
	case specs.OpLessThan, specs.OpLessEqual:
		// A range from AF_UNSPEC up: the same domains one by one, without
		// AF_UNIX (runc joins two comparisons of one argument with OR, so
		// a range cannot be cut with a second comparison).
		end := a.Value
		if a.Op == specs.OpLessEqual {
			end++
		}
		var out []*seccomp.Syscall
		for d := uint64(unix.AF_UNIX + 1); d < end; d++ {
			out = append(out, socketRule(r, d, specs.OpEqualTo))
		}
		return out, nil
	case specs.OpGreaterThan, specs.OpGreaterEqual:
		lo := a.Value
		if a.Op == specs.OpGreaterThan {
			lo++
		}
		if lo > unix.AF_UNIX {
			return []*seccomp.Syscall{r}, nil
		}
	}
	return nil, fmt.Errorf("seccomp profile: a socket rule (%s %d) would let AF_UNIX through", a.Op, a.Value)
}

// socketTypeMask is the part of socket(2)'s type argument that names the
// type; SOCK_NONBLOCK and SOCK_CLOEXEC lie above it.
const socketTypeMask = 0xf

// connectedSocketpairs returns rule r with socketpair taken out of it and
// allowed again only for SOCK_STREAM and SOCK_SEQPACKET (flag bits masked
// off): both ends of such a pair are connected to each other for good, and
// connect(2) or a sendto(2) address on them is refused or ignored. A
// SOCK_DGRAM end can be pointed at any socket path the cage sees.
func connectedSocketpairs(r *seccomp.Syscall) []*seccomp.Syscall {
	if r.Action != specs.ActAllow || !slices.Contains(r.Names, "socketpair") {
		return []*seccomp.Syscall{r}
	}
	var out []*seccomp.Syscall
	keep := *r
	keep.Names = slices.DeleteFunc(slices.Clone(r.Names), func(n string) bool { return n == "socketpair" })
	if len(keep.Names) > 0 {
		out = append(out, &keep)
	}
	for _, typ := range []uint64{unix.SOCK_STREAM, unix.SOCK_SEQPACKET} {
		out = append(out, &seccomp.Syscall{
			LinuxSyscall: specs.LinuxSyscall{
				Names:  []string{"socketpair"},
				Action: specs.ActAllow,
				Args:   []specs.LinuxSeccompArg{{Index: 1, Value: socketTypeMask, ValueTwo: typ, Op: specs.OpMaskedEqual}},
			},
			Includes: r.Includes,
			Excludes: r.Excludes,
		})
	}
	return out
}

func socketRule(like *seccomp.Syscall, domain uint64, op specs.LinuxSeccompOperator) *seccomp.Syscall {
	return &seccomp.Syscall{
		LinuxSyscall: specs.LinuxSyscall{
			Names:  []string{"socket"},
			Action: specs.ActAllow,
			Args:   []specs.LinuxSeccompArg{{Index: 0, Value: domain, Op: op}},
		},
		Includes: like.Includes,
		Excludes: like.Excludes,
	}
}

// TestSeccompJSONIsDerived: the profile the binary ships is the one derived
// from the profile package this module requires. After a change of either,
// `go generate ./internal/harden` writes it anew (MCPCAGE_WRITE_SECCOMP=1).
func TestSeccompJSONIsDerived(t *testing.T) {
	want, err := cageSeccomp()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("MCPCAGE_WRITE_SECCOMP") == "1" {
		if err := os.WriteFile("seccomp.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(seccompJSON, want) {
		t.Fatal("seccomp.json is not the profile derived from github.com/moby/profiles/seccomp: run `go generate ./internal/harden` and review the diff")
	}
}

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

// admitsSocketpair reports whether a rule of p lets socketpair(AF_UNIX,
// typ, 0) through.
func admitsSocketpair(p *seccomp.Seccomp, typ uint64) bool {
	for _, r := range p.Syscalls {
		if r.Action != specs.ActAllow || !slices.Contains(r.Names, "socketpair") {
			continue
		}
		ok := true
		for _, a := range r.Args {
			switch {
			case a.Index != 1:
			case a.Op == specs.OpMaskedEqual:
				ok = ok && typ&a.Value == a.ValueTwo
			default:
				ok = false // a shape this test does not know: not counted as allowed
			}
		}
		if ok {
			return true
		}
	}
	return false
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
	// socketpair: only for the connected types, whatever flags are added.
	for _, c := range []struct {
		typ  uint64
		want bool
	}{
		{unix.SOCK_STREAM, true}, {unix.SOCK_SEQPACKET, true},
		{unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK, true},
		{unix.SOCK_DGRAM, false}, {unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, false}, {unix.SOCK_RAW, false},
		{unix.SOCK_RDM, false}, {unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, false},
	} {
		if got := admitsSocketpair(&got, c.typ); got != c.want {
			t.Errorf("socketpair(AF_UNIX, %#x): allowed %v, want %v", c.typ, got, c.want)
		}
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
			if n != "socket" && n != "socketcall" && n != "socketpair" && r.Action == specs.ActAllow && len(r.Args) == 0 && r.Includes == nil && !allowed(&got, n) {
				t.Errorf("%s lost", n)
			}
		}
	}
}
