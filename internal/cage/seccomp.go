package cage

//lint:file-ignore SA1019 a profile may still carry the deprecated Syscall.Name; it is read so that no socket rule slips past it

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// SeccompProfile is the cage's seccomp profile, as the JSON the engine takes
// in "seccomp=..." (the format of `docker run --security-opt seccomp=FILE`).
//
// It is the engine's own default profile (github.com/moby/profiles/seccomp,
// the package dockerd builds its default from, so it follows the engine's
// choices instead of a copy of them), with one change: socket(2) may not
// create an AF_UNIX socket. A read-only bind does not stop connect(2) to a
// Unix socket in it, so any mounted folder holding a tmux, ssh-agent, D-Bus or
// X11 socket would hand the server a way to run code on the host; without
// the socket call there is nothing to connect with. socketpair(2), which
// runtimes use for their own child processes, stays allowed: its two ends are
// connected to each other and to nothing else. socket(AF_UNIX, ...) fails
// with the profile's default answer, EPERM (an explicit refusal rule next to
// the allow rules of the other domains is rejected by libseccomp 2.5 with
// EEXIST, so the default does it). socketcall(2), the multiplexer
// 32-bit programs use, is refused, because its arguments sit behind a pointer
// that seccomp cannot read.
func SeccompProfile() (string, error) {
	p := seccomp.DefaultProfile()
	var rules []*seccomp.Syscall
	for _, r := range p.Syscalls {
		out, err := withoutUnixSockets(r)
		if err != nil {
			return "", err
		}
		rules = append(rules, out...)
	}
	p.Syscalls = rules
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("cannot encode the seccomp profile: %v", err)
	}
	return string(b), nil
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
