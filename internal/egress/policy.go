// Package egress is the filter between a caged server and the network: a
// gateway that lets the server reach exactly the host names it was allowed,
// and reports every connection attempt.
//
// Contract. The cage has no network; its only way out is the shim in it
// (Shim, on the cage's loopback address), which carries each connection to
// the gateway over a session of streams (mux.go) and decides nothing. The
// gateway answers the cage's DNS: an allowed name resolves to the shim's
// address, every other name is NXDOMAIN. Every TCP connection the cage makes
// ends at the gateway, which decides by name, in this order:
//
//   - an HTTP proxy request (CONNECT host:port, or an absolute-form
//     request): the host and port it names (servers that honour HTTPS_PROXY);
//   - a TLS ClientHello: its SNI name, on the port the cage connected to;
//   - a plain HTTP request: its Host header, on that port;
//   - anything else (a database protocol, a server that speaks first): the
//     one allowed name with that port, if exactly one has it.
//
// The chosen host:port must match a Rule. The gateway then resolves the name
// itself and dials one of its addresses; an address that is loopback,
// private, link-local (cloud metadata), CGNAT, multicast or otherwise not
// globally routable is refused unless the Policy allows private addresses.
// Because the cage never learns the real address and the gateway checks the
// very address it dials, a name that resolves to an internal address (DNS
// rebinding) is refused too.
//
// What it does not do: it does not read or change what flows through an
// allowed connection (TLS stays end to end), so an allowed host receives
// whatever the server chooses to send it, and a host behind a shared front
// (a CDN) may route on the inner Host the gateway does not see.
package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// DefaultPort is the port of a rule written without one.
const DefaultPort = 443

// Rule allows one host name (or every subdomain of one) on one port.
type Rule struct {
	Host     string // lower case, no trailing dot; for a wildcard the parent ("example.com")
	Wildcard bool   // "*.example.com": subdomains of Host, not Host itself
	Port     int
}

func (r Rule) String() string {
	h := r.Host
	if r.Wildcard {
		h = "*." + h
	}
	return h + ":" + strconv.Itoa(r.Port)
}

// Flag is the --allow-host value that gives this rule, as a hint would write it.
func (r Rule) Flag() string {
	s := r.Host
	if r.Wildcard {
		s = "*." + s
	}
	if r.Port != DefaultPort {
		s += ":" + strconv.Itoa(r.Port)
	}
	return s
}

// matches reports whether the rule allows host (normalised) on port.
func (r Rule) matches(host string, port int) bool {
	return r.Port == port && r.matchesName(host)
}

func (r Rule) matchesName(host string) bool {
	if r.Wildcard {
		return strings.HasSuffix(host, "."+r.Host)
	}
	return host == r.Host
}

// ParseRule reads HOST[:PORT] as --allow-host takes it: a DNS name, or
// "*.NAME" for the subdomains of NAME; the port is 443 when omitted.
func ParseRule(s string) (Rule, error) {
	orig := s
	s = strings.TrimSpace(s)
	port := DefaultPort
	if k := strings.LastIndexByte(s, ':'); k >= 0 {
		p, err := strconv.Atoi(s[k+1:])
		if err != nil || p < 1 || p > 65535 {
			return Rule{}, fmt.Errorf("--allow-host %q: the port must be a number from 1 to 65535", orig)
		}
		port = p
		s = s[:k]
	}
	r := Rule{Port: port}
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		r.Wildcard = true
		s = rest
	}
	h, err := NormalName(s)
	if err != nil {
		return Rule{}, fmt.Errorf("--allow-host %q: %v", orig, err)
	}
	if r.Wildcard && !strings.Contains(h, ".") {
		return Rule{}, fmt.Errorf("--allow-host %q: a wildcard needs a parent of at least two labels, like *.example.com", orig)
	}
	r.Host = h
	return r, nil
}

// NormalName lower-cases a DNS name and drops a trailing dot, and refuses
// what is not a host name: IP literals (the filter decides by name), empty
// or over-long labels, characters outside letters, digits, '-' and '_'.
func NormalName(s string) (string, error) {
	s = strings.TrimSuffix(strings.ToLower(s), ".")
	if s == "" {
		return "", errors.New("no host name")
	}
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return "", errors.New("give a host name, not an address: the filter decides by name")
	}
	if len(s) > 253 {
		return "", errors.New("the name is longer than 253 characters")
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return "", errors.New("the name has an empty or over-long label")
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return "", errors.New("a label may not start or end with '-'")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("%q is not allowed in a host name", string(c))
			}
		}
	}
	return s, nil
}

// Policy is what a session allows.
type Policy struct {
	Rules []Rule
	// AllowPrivate lets allowed names resolve to private, loopback and
	// link-local addresses (a service on the LAN, the tests' own network).
	AllowPrivate bool
}

// ParsePolicy reads --allow-host values, dropping duplicates.
func ParsePolicy(hosts []string, allowPrivate bool) (Policy, error) {
	p := Policy{AllowPrivate: allowPrivate}
	for _, h := range hosts {
		r, err := ParseRule(h)
		if err != nil {
			return Policy{}, err
		}
		if !slices.Contains(p.Rules, r) {
			p.Rules = append(p.Rules, r)
		}
	}
	return p, nil
}

// Allowed reports whether host:port may be reached.
func (p Policy) Allowed(host string, port int) bool {
	h, err := NormalName(host)
	if err != nil {
		return false
	}
	for _, r := range p.Rules {
		if r.matches(h, port) {
			return true
		}
	}
	return false
}

// NameAllowed reports whether some rule names host, on any port: the DNS
// answer.
func (p Policy) NameAllowed(host string) bool {
	h, err := NormalName(host)
	if err != nil {
		return false
	}
	for _, r := range p.Rules {
		if r.matchesName(h) {
			return true
		}
	}
	return false
}

// ByPort returns the one host a connection to port can mean when the
// protocol names none: the single non-wildcard rule with that port.
func (p Policy) ByPort(port int) (string, bool) {
	host := ""
	for _, r := range p.Rules {
		if r.Port != port {
			continue
		}
		if r.Wildcard || host != "" {
			return "", false
		}
		host = r.Host
	}
	return host, host != ""
}

// Ports are the ports the gateway listens on for the cage.
func (p Policy) Ports() []int {
	var ports []int
	for _, r := range p.Rules {
		if !slices.Contains(ports, r.Port) {
			ports = append(ports, r.Port)
		}
	}
	slices.Sort(ports)
	return ports
}

// Args are the policy as the gateway subcommand's arguments.
func (p Policy) Args() []string {
	var a []string
	for _, r := range p.Rules {
		a = append(a, "--allow", r.Flag())
	}
	if p.AllowPrivate {
		a = append(a, "--allow-private")
	}
	return a
}
