package harden

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
)

// seccompJSON is the cage's seccomp profile. It is written by
// TestSeccompJSONIsDerived (seccomp_linux_test.go) from the engine's own
// default profile (github.com/moby/profiles/seccomp, the package dockerd
// builds its default from, so it follows the engine's choices instead of a
// hand-kept copy), and that test fails when the file and the package part
// ways. The file, not the package, ships: the profile is Linux data the engine
// applies, and a binary built for macOS or Windows (talking to Docker
// Desktop's Linux engine) sends the same bytes as one built for Linux.
//
//go:generate env MCPCAGE_WRITE_SECCOMP=1 go test -run TestSeccompJSONIsDerived .
//go:embed seccomp.json
var seccompJSON []byte

// SeccompProfile is the cage's seccomp profile, as the JSON the engine takes
// in "seccomp=..." (the format of `docker run --security-opt seccomp=FILE`).
//
// It is the engine's default profile with one change: socket(2) may not
// create an AF_UNIX socket. A read-only bind does not stop connect(2) to a
// Unix socket in it, so any mounted folder holding a tmux, ssh-agent, D-Bus or
// X11 socket would hand the server a way to run code on the host; without
// the socket call there is nothing to connect with. socketpair(2), which
// runtimes use for their own child processes, stays allowed for SOCK_STREAM
// and SOCK_SEQPACKET (the type masked with 0xf, so the CLOEXEC and NONBLOCK
// flags pass): their two ends are connected to each other and to nothing
// else. A SOCK_DGRAM end could sendto(2) any datagram socket in a mounted
// folder (journald, syslog, a notify socket), so that type is refused. socket(AF_UNIX, ...) fails
// with the profile's default answer, EPERM (an explicit refusal rule next to
// the allow rules of the other domains is rejected by libseccomp 2.5 with
// EEXIST, so the default does it). socketcall(2), the multiplexer
// 32-bit programs use, is refused, because its arguments sit behind a pointer
// that seccomp cannot read.
func SeccompProfile() (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, seccompJSON); err != nil {
		return "", fmt.Errorf("the built-in seccomp profile is damaged: %v", err)
	}
	return b.String(), nil
}

// GVisorSeccompProfile is SeccompProfile for a cage under gVisor (runsc
// with --oci-seccomp): the same profile, but clone3(2) allowed. The
// engine's profile answers clone3 with ENOSYS, so that the C library falls
// back to clone(2), whose flags the profile can read; gVisor (2022-12-19)
// does not give a rule's errno back, the C library does not fall back, and
// no thread starts (node aborts at its first one). Under gVisor a
// namespace clone3 makes is one of gVisor's own kernel.
func GVisorSeccompProfile() (string, error) {
	var p map[string]any
	if err := json.Unmarshal(seccompJSON, &p); err != nil {
		return "", fmt.Errorf("the built-in seccomp profile is damaged: %v", err)
	}
	rules, _ := p["syscalls"].([]any)
	var out []any
	for _, r := range rules {
		m, _ := r.(map[string]any)
		names, _ := m["names"].([]any)
		if len(names) == 1 && names[0] == "clone3" && m["action"] == "SCMP_ACT_ERRNO" {
			continue
		}
		out = append(out, r)
	}
	p["syscalls"] = append(out, map[string]any{"names": []string{"clone3"}, "action": "SCMP_ACT_ALLOW"})
	b, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
