package egress

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// Refusal is the one stderr line for a refused attempt: the host, and
// the flag that would allow it.
func Refusal(name string, e Event) string {
	host, what, flag := Allowing(e)
	if host == "" {
		return fmt.Sprintf("mcpcage: egress: %q tried a connection to port %d that names no host; refused (%s)", name, e.Port, printable(e.Reason, 200))
	}
	return fmt.Sprintf("mcpcage: egress: refused %q's connection to %s (%s); allow it with %s", name, what, printable(e.Reason, 200), flag)
}

// Allowing reads a refused attempt: the host it named ("" for none),
// what it tried (the host, with the port when it came that far), and the
// flag that would allow it ("--allow-host HOST[:PORT]", or
// --allow-private-addresses for an allowed name at a private address).
func Allowing(e Event) (host, what, flag string) {
	if h, err := NormalName(e.Host); err == nil {
		host = h
	}
	if host == "" {
		return "", "", ""
	}
	flag = "--allow-host " + host
	if e.Port != 0 && e.Port != DefaultPort {
		flag += ":" + strconv.Itoa(e.Port)
	}
	if strings.Contains(e.Reason, "private address") {
		flag = "--allow-private-addresses"
	}
	what = host
	if e.Via != "dns" {
		what += ":" + strconv.Itoa(e.Port)
	}
	return host, what, flag
}

// printable keeps gateway text to one printable line: its errors may quote
// what the cage sent.
func printable(s string, max int) string {
	if len(s) > max {
		s = s[:max]
	}
	return untrusted.Line(s)
}
