package cage

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
