package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeNet is a small "internet" on loopback addresses of the test's own:
// each name resolves to its own 127.x.y.z, where the test listens.
type fakeNet struct {
	names map[string]netip.Addr
}

func (f *fakeNet) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := f.names[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

func loopback() netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(20 + rand.IntN(200)), byte(rand.IntN(250)), byte(2 + rand.IntN(250))})
}

type events struct {
	mu sync.Mutex
	ev []Event
}

func (e *events) add(ev Event) { e.mu.Lock(); e.ev = append(e.ev, ev); e.mu.Unlock() }
func (e *events) all() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.ev...)
}

// waitEvents waits until n events are in (a connection is reported when
// it closes, just after the client sees the close).
func (e *events) wait(t *testing.T, n int) []Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if ev := e.all(); len(ev) >= n {
			return ev
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("want %d events, have %v", n, e.all())
	return nil
}

// upstreams starts an HTTPS server (port 443) and a raw echo service (port
// 7000) on addr, and returns the HTTPS server's certificate pool.
func upstreams(t *testing.T, addr netip.Addr, body string) {
	ln, err := net.Listen("tcp", netip.AddrPortFrom(addr, 443).String())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	}))
	srv.Listener = ln
	srv.StartTLS()
	t.Cleanup(srv.Close)
	eln, err := net.Listen("tcp", netip.AddrPortFrom(addr, 7000).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eln.Close() })
	go func() {
		for {
			c, err := eln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.WriteString(c, "hello from "+body+"\n")
				io.Copy(c, c)
			}()
		}
	}()
}

// startGateway starts a gateway and its shim, joined as in a session: the
// shim listens on a loopback address of the test's own (g.Addr, which the
// gateway's DNS answers name) and carries each connection to the gateway
// over a pair of pipes.
func startGateway(t *testing.T, p Policy, fn *fakeNet) (*Gateway, *events) {
	ev := &events{}
	g := &Gateway{Policy: p, Addr: loopback(), Resolver: fn, Events: ev.add}
	upR, upW := io.Pipe()
	downR, downW := io.Pipe()
	go g.Serve(Conn(upR, downW))
	dialled := false
	s := &Shim{Addr: g.Addr, Ports: p.Ports(), Dial: func() (io.ReadWriteCloser, error) {
		if dialled {
			return nil, io.EOF // one session: the gateway serves one
		}
		dialled = true
		return Conn(downR, upW), nil
	}}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); g.Close() })
	return g, ev
}

func testNet(t *testing.T) *fakeNet {
	fn := &fakeNet{names: map[string]netip.Addr{}}
	for _, n := range []string{"api.allowed.test", "api.denied.test", "a.wild.test", "wild.test"} {
		a := loopback()
		fn.names[n] = a
		upstreams(t, a, n)
	}
	return fn
}

// httpsVia fetches https://host/ with the TCP connection going to dial.
func httpsVia(host string, dial func(ctx context.Context, network, addr string) (net.Conn, error), proxy string) (string, error) {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}
	if dial != nil {
		tr.DialContext = dial
	}
	if proxy != "" {
		tr.Proxy = func(*http.Request) (*urlT, error) { return parseURL(proxy) }
	}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Get("https://" + host + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func toGateway(g *Gateway, port int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", netip.AddrPortFrom(g.Addr, uint16(port)).String())
	}
}

func TestGatewayDecidesByName(t *testing.T) {
	fn := testNet(t)
	p, _ := ParsePolicy([]string{"api.allowed.test", "api.allowed.test:7000", "*.wild.test"}, true)
	g, ev := startGateway(t, p, fn)

	// Transparent: the cage's DNS sent it to the gateway; SNI decides.
	if body, err := httpsVia("api.allowed.test", toGateway(g, 443), ""); err != nil || body != "api.allowed.test" {
		t.Fatalf("allowed host over SNI: %q, %v", body, err)
	}
	ev.wait(t, 1) // reported at close: wait, so the order is the test's
	if _, err := httpsVia("api.denied.test", toGateway(g, 443), ""); err == nil {
		t.Fatal("denied host over SNI was reached")
	}
	ev.wait(t, 2) // reported at close: wait, so the order is the test's
	// Through HTTPS_PROXY: CONNECT decides.
	proxy := "http://" + netip.AddrPortFrom(g.Addr, ProxyPort).String()
	if body, err := httpsVia("api.allowed.test", nil, proxy); err != nil || body != "api.allowed.test" {
		t.Fatalf("allowed host over CONNECT: %q, %v", body, err)
	}
	ev.wait(t, 3) // reported at close: wait, so the order is the test's
	if _, err := httpsVia("api.denied.test", nil, proxy); err == nil {
		t.Fatal("denied host over CONNECT was reached")
	}
	ev.wait(t, 4) // reported at close: wait, so the order is the test's
	// A wildcard: subdomains only.
	if body, err := httpsVia("a.wild.test", toGateway(g, 443), ""); err != nil || body != "a.wild.test" {
		t.Fatalf("wildcard subdomain: %q, %v", body, err)
	}
	ev.wait(t, 5) // reported at close: wait, so the order is the test's
	if _, err := httpsVia("wild.test", toGateway(g, 443), ""); err == nil {
		t.Fatal("a wildcard allowed its parent")
	}
	ev.wait(t, 6)

	// Raw TCP: the one name with port 7000.
	c, err := net.Dial("tcp", netip.AddrPortFrom(g.Addr, 7000).String())
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "hello from api.allowed.test\n" {
		t.Fatalf("raw TCP: %q, %v", line, err)
	}
	io.WriteString(c, "ping\n")
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping\n" {
		t.Fatalf("echo: %q, %v", buf, err)
	}
	c.Close()
	// Another port of the gateway is closed.
	if c, err := net.DialTimeout("tcp", netip.AddrPortFrom(g.Addr, 22).String(), time.Second); err == nil {
		c.Close()
		t.Fatal("the gateway answered on port 22")
	}
	// An allowed connection is reported when allowed (phase open) and
	// when it ends; the test reads the ends in order and checks that each
	// had its open first.
	var all, opens []Event
	for _, e := range ev.wait(t, 11) {
		if e.Phase == "open" {
			opens = append(opens, e)
			if e.Verdict != "allowed" || e.Addr == "" || e.Sent != 0 {
				t.Errorf("an open report: %+v", e)
			}
			continue
		}
		if e.Verdict == "allowed" {
			if e.Phase != "end" || !slices.ContainsFunc(opens, func(o Event) bool { return o.Host == e.Host && o.Port == e.Port && o.Addr == e.Addr }) {
				t.Errorf("an allowed connection ended without its open report first: %+v", e)
			}
		}
		all = append(all, e)
	}
	if len(opens) != 4 {
		t.Errorf("%d open reports, want 4: %+v", len(opens), opens)
	}
	want := []struct {
		host, verdict, via string
		port               int
	}{
		{"api.allowed.test", "allowed", "sni", 443},
		{"api.denied.test", "refused", "sni", 443},
		{"api.allowed.test", "allowed", "connect", 443},
		{"api.denied.test", "refused", "connect", 443},
		{"a.wild.test", "allowed", "sni", 443},
		{"wild.test", "refused", "sni", 443},
		{"api.allowed.test", "allowed", "port", 7000},
	}
	if len(all) != len(want) {
		t.Fatalf("events: %+v", all)
	}
	// The reports of one connection's end and the next one's refusal may
	// come in either order: each wanted event is matched once.
	used := make([]bool, len(all))
	for _, w := range want {
		i := -1
		for k, e := range all {
			if !used[k] && e.Host == w.host && e.Verdict == w.verdict && e.Via == w.via && e.Port == w.port {
				i = k
				break
			}
		}
		if i < 0 {
			t.Errorf("no event %+v among %+v", w, all)
			continue
		}
		used[i] = true
		e := all[i]
		if w.verdict == "allowed" && (e.Sent == 0 || e.Received == 0) {
			t.Errorf("event %d counts no bytes: %+v", i, e)
		}
		if w.verdict == "refused" && e.Received != 0 {
			t.Errorf("refused event %d received bytes: %+v", i, e)
		}
		// The echo: 5 bytes up, the greeting and the echo down.
		if w.port == 7000 && (e.Sent != 5 || e.Received != int64(len("hello from api.allowed.test\n")+5)) {
			t.Errorf("raw TCP counts: %+v", e)
		}
	}
}

func TestGatewayRefusesPrivateAddresses(t *testing.T) {
	fn := testNet(t)
	p, _ := ParsePolicy([]string{"api.allowed.test"}, false)
	g, ev := startGateway(t, p, fn)
	if _, err := httpsVia("api.allowed.test", toGateway(g, 443), ""); err == nil {
		t.Fatal("a name resolving to a loopback address was reached without AllowPrivate")
	}
	e := ev.wait(t, 1)[0]
	if e.Verdict != "refused" || !strings.Contains(e.Reason, "private address") || !strings.Contains(e.Reason, "--allow-private-addresses") {
		t.Fatalf("event: %+v", e)
	}
}

func TestGatewayCloseReportsOpenConnections(t *testing.T) {
	fn := testNet(t)
	p, _ := ParsePolicy([]string{"api.allowed.test:7000"}, true)
	g, ev := startGateway(t, p, fn)
	c, err := net.Dial("tcp", netip.AddrPortFrom(g.Addr, 7000).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { g.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end an open connection")
	}
	all := ev.all()
	if len(all) != 2 || all[0].Phase != "open" || all[1].Verdict != "allowed" || all[1].Phase != "end" || all[1].Received == 0 {
		t.Fatalf("events after Close: %+v", all)
	}
}

func TestDNSAnswer(t *testing.T) {
	p, _ := ParsePolicy([]string{"api.allowed.test", "*.wild.test"}, false)
	g := &Gateway{Policy: p, Addr: netip.MustParseAddr("172.30.0.2")}
	ask := func(name string, typ dnsmessage.Type) (dnsmessage.Message, string) {
		t.Helper()
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET})
		q, _ := b.Finish()
		reply, refused := g.Answer(q)
		var m dnsmessage.Message
		if err := m.Unpack(reply); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return m, refused
	}
	m, ref := ask("API.allowed.test.", dnsmessage.TypeA)
	if m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 1 || m.Answers[0].Body.(*dnsmessage.AResource).A != [4]byte{172, 30, 0, 2} || ref != "" || m.ID != 7 {
		t.Fatalf("allowed A: %+v", m)
	}
	if m, _ := ask("api.allowed.test.", dnsmessage.TypeAAAA); m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 0 {
		t.Fatalf("allowed AAAA: %+v", m)
	}
	if m, _ := ask("x.wild.test.", dnsmessage.TypeA); len(m.Answers) != 1 {
		t.Fatalf("wildcard A: %+v", m)
	}
	for _, n := range []string{"api.denied.test.", "wild.test.", "metadata.google.internal.", "localhost."} {
		m, ref := ask(n, dnsmessage.TypeA)
		if m.RCode != dnsmessage.RCodeNameError || len(m.Answers) != 0 || ref != strings.TrimSuffix(n, ".") {
			t.Fatalf("%s: %+v, refused %q", n, m, ref)
		}
	}
	if r, _ := g.Answer([]byte{1, 2, 3}); r != nil {
		t.Fatal("answered garbage")
	}
}
