package egress

import (
	"net/netip"
	"testing"
)

func TestParseRule(t *testing.T) {
	good := map[string]Rule{
		"api.github.com":      {Host: "api.github.com", Port: 443},
		"API.GitHub.com.":     {Host: "api.github.com", Port: 443},
		"db.example.com:5432": {Host: "db.example.com", Port: 5432},
		"*.example.com":       {Host: "example.com", Wildcard: true, Port: 443},
		"*.example.com:80":    {Host: "example.com", Wildcard: true, Port: 80},
	}
	for in, want := range good {
		got, err := ParseRule(in)
		if err != nil || got != want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", ":443", "a.com:0", "a.com:65536", "a.com:x", "10.0.0.1", "[::1]:443", "*.com", "*", "a..com", "-a.com", "a b.com", "a.com/x", "*.*.a.com", "xn--é.com"} {
		if r, err := ParseRule(in); err == nil {
			t.Errorf("ParseRule(%q) = %+v, want an error", in, r)
		}
	}
}

func TestPolicyMatch(t *testing.T) {
	p, err := ParsePolicy([]string{"api.allowed.test", "*.wild.test", "db.allowed.test:5432", "api.allowed.test"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 3 {
		t.Fatalf("duplicates kept: %v", p.Rules)
	}
	cases := []struct {
		host string
		port int
		want bool
	}{
		{"api.allowed.test", 443, true},
		{"API.allowed.test.", 443, true},
		{"api.allowed.test", 80, false},
		{"x.api.allowed.test", 443, false},
		{"api.denied.test", 443, false},
		{"a.wild.test", 443, true},
		{"a.b.wild.test", 443, true},
		{"wild.test", 443, false},
		{"evilwild.test", 443, false},
		{"db.allowed.test", 5432, true},
		{"db.allowed.test", 443, false},
		{"1.2.3.4", 443, false},
	}
	for _, c := range cases {
		if got := p.Allowed(c.host, c.port); got != c.want {
			t.Errorf("Allowed(%q, %d) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
	if !p.NameAllowed("db.allowed.test") || p.NameAllowed("wild.test") || !p.NameAllowed("x.wild.test") {
		t.Error("NameAllowed is wrong")
	}
	if h, ok := p.ByPort(5432); !ok || h != "db.allowed.test" {
		t.Errorf("ByPort(5432) = %q, %v", h, ok)
	}
	if _, ok := p.ByPort(443); ok {
		t.Error("ByPort(443) picked a host although a wildcard shares the port")
	}
	if got := p.Ports(); len(got) != 2 || got[0] != 443 || got[1] != 5432 {
		t.Errorf("Ports() = %v", got)
	}
}

func TestPublic(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "10.1.2.3", "172.17.0.1", "192.168.1.1", "169.254.169.254", "100.100.100.200",
		"0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fd00:ec2::254", "::ffff:127.0.0.1",
		"64:ff9b::a9fe:a9fe", "2002:a00:1::1", "::7f00:1"} {
		if Public(netip.MustParseAddr(s)) {
			t.Errorf("Public(%s) = true", s)
		}
	}
	for _, s := range []string{"1.1.1.1", "140.82.112.6", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"} {
		if !Public(netip.MustParseAddr(s)) {
			t.Errorf("Public(%s) = false", s)
		}
	}
}
