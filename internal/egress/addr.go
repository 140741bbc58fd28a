package egress

import "net/netip"

// notPublic are the ranges a name must not resolve to unless private
// addresses are allowed: anything that reaches this machine, the local
// network or the cloud provider's metadata service instead of the internet.
var notPublic = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",         // "this network"
		"10.0.0.0/8",        // private
		"100.64.0.0/10",     // CGNAT (and Alibaba's metadata 100.100.100.200)
		"127.0.0.0/8",       // loopback
		"169.254.0.0/16",    // link-local: cloud metadata 169.254.169.254
		"172.16.0.0/12",     // private (Docker's bridges)
		"192.0.0.0/24",      // IETF protocol assignments
		"192.0.2.0/24",      // documentation
		"192.168.0.0/16",    // private
		"198.18.0.0/15",     // benchmarking
		"198.51.100.0/24",   // documentation
		"203.0.113.0/24",    // documentation
		"224.0.0.0/4",       // multicast
		"240.0.0.0/4",       // reserved, broadcast
		"::/128", "::1/128", // unspecified, loopback
		"100::/64",      // discard
		"2001:db8::/32", // documentation
		"fc00::/7",      // unique local (AWS metadata fd00:ec2::254)
		"fe80::/10",     // link-local
		"ff00::/8",      // multicast
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// Public reports whether a is a globally routable unicast address. IPv6
// forms that carry an IPv4 address (mapped, NAT64, 6to4) are judged by the
// address they carry.
func Public(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case netip.MustParsePrefix("64:ff9b::/96").Contains(a), netip.MustParsePrefix("64:ff9b:1::/48").Contains(a):
			return Public(netip.AddrFrom4([4]byte(b[12:16])))
		case netip.MustParsePrefix("2002::/16").Contains(a):
			return Public(netip.AddrFrom4([4]byte(b[2:6])))
		case netip.MustParsePrefix("::/96").Contains(a): // IPv4-compatible (deprecated)
			return Public(netip.AddrFrom4([4]byte(b[12:16])))
		}
	}
	for _, p := range notPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
