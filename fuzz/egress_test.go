package fuzz

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/mcpcage/mcpcage/internal/egress"
)

// FuzzEgressSniff: the first bytes a caged server sends decide where its
// connection goes; the sniffer never panics, names only what it read, and
// hands on every byte it consumed (nothing lost before the upstream).
func FuzzEgressSniff(f *testing.F) {
	f.Add([]byte("CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n\x16\x03\x01"))
	f.Add([]byte("GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: api.example.com:8080\r\n\r\n"))
	f.Add([]byte("\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00"))
	f.Add([]byte("\x00\x00\x00\x08\x04\xd2\x16\x2f"))
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := net.Pipe()
		go func() {
			a.Write(in)
			a.Close()
		}()
		defer b.Close()
		s, err := egress.Sniff(b, 50*time.Millisecond)
		if err != nil {
			return
		}
		if !s.Connect && !bytes.HasPrefix(in, s.Rest) {
			t.Fatalf("replayed bytes that were not sent: %q", s.Rest)
		}
		if s.Host != "" && !bytes.Contains(in, []byte(s.Host)) && s.Via != "sni" {
			t.Fatalf("named %q, not in the input", s.Host)
		}
	})
}

// FuzzEgressDNS: a hostile DNS query never panics the gateway, and an
// answer is only ever the gateway's own address.
func FuzzEgressDNS(f *testing.F) {
	f.Add([]byte{0, 7, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'a', 'p', 'i', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1})
	p, _ := egress.ParsePolicy([]string{"api.test", "*.wild.test"}, false)
	g := &egress.Gateway{Policy: p, Addr: netip.MustParseAddr("172.30.0.2")}
	f.Fuzz(func(t *testing.T, q []byte) {
		reply, _ := g.Answer(q)
		if reply == nil {
			return
		}
		if len(reply) > 512 {
			t.Fatalf("reply of %d bytes", len(reply))
		}
		var m dnsMessage
		if err := m.Unpack(reply); err != nil {
			t.Fatalf("unparseable reply: %v", err)
		}
		for _, a := range m.Answers {
			if r, ok := a.Body.(*aResource); !ok || r.A != [4]byte{172, 30, 0, 2} {
				t.Fatalf("answered %v", a.Body)
			}
		}
	})
}

type (
	dnsMessage = dnsmessage.Message
	aResource  = dnsmessage.AResource
)

// FuzzEgressSession: what comes up the pipes is the cage's (its server can
// replace the shim and write anything): the gateway's end of a session
// never panics and returns once the input ends, and dials nothing that the
// policy does not allow.
func FuzzEgressSession(f *testing.F) {
	// A yamux SYN for stream 1, then its data: port 7000, then bytes.
	syn := []byte{0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0}
	data := []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 6, 0x1b, 0x58, 'p', 'i', 'n', 'g'}
	f.Add(append(append([]byte(nil), syn...), data...))
	f.Add(append(append([]byte(nil), syn...), 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 53))
	f.Add([]byte{0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7})
	f.Add([]byte{0, 1, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := egress.ParsePolicy([]string{"api.allowed.test:7000"}, false)
		if err != nil {
			t.Fatal(err)
		}
		g := &egress.Gateway{Policy: p, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, errors.New("no upstream in a fuzz run")
		}, Resolver: noNames{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.Serve(egress.Conn(io.NopCloser(bytes.NewReader(in)), nopWriter{}))
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the session did not end with its input")
		}
		g.Close()
	})
}

type noNames struct{}

func (noNames) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return nil, errors.New("no names in a fuzz run")
}

type nopWriter struct{}

func (nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (nopWriter) Close() error                { return nil }
