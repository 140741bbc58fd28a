package egress

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"golang.org/x/net/dns/dnsmessage"
)

// A stream that names a port the gateway does not serve (only a replaced,
// hostile shim sends one) is closed unread: no event, no dial.
func TestGatewayClosesStreamOfUnservedPort(t *testing.T) {
	fn := testNet(t)
	p, _ := ParsePolicy([]string{"api.allowed.test:7000"}, true)
	var dials atomic.Int32
	ev := &events{}
	g := &Gateway{Policy: p, Resolver: fn, Events: ev.add, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	upR, upW := io.Pipe()
	downR, downW := io.Pipe()
	go g.Serve(Conn(upR, downW))
	defer g.Close()
	sess, err := yamux.Client(Conn(downR, upW), muxConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, hdr := range [][]byte{{0, 22}, {0x1f, 0x90}, {0, 0}, {0}} {
		st, err := sess.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		st.Write(append(hdr, "GET / HTTP/1.1\r\nHost: api.allowed.test:7000\r\n\r\n"...))
		if len(hdr) == 1 {
			st.Close() // a header cut short
		}
		st.SetReadDeadline(time.Now().Add(5 * time.Second))
		if b, err := io.ReadAll(st); err != nil || len(b) != 0 {
			t.Fatalf("header %x: read %q, %v; want the stream closed", hdr, b, err)
		}
		st.Close()
	}
	// The session still serves an allowed port.
	st, err := sess.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	st.Write([]byte{0x1b, 0x58}) // 7000
	if line, err := bufio.NewReader(st).ReadString('\n'); err != nil || line != "hello from api.allowed.test\n" {
		t.Fatalf("port 7000: %q, %v", line, err)
	}
	st.Close()
	if all := ev.wait(t, 1); len(all) != 1 || dials.Load() != 1 {
		t.Fatalf("events %+v, %d dials; want the one allowed connection", all, dials.Load())
	}
}

// The cage's resolver asks over UDP; the shim carries the query to the
// gateway, whose answer names the shim's own address.
func TestShimDNSOverUDP(t *testing.T) {
	p, _ := ParsePolicy([]string{"api.allowed.test"}, false)
	g, ev := startGateway(t, p, &fakeNet{})
	c, err := net.Dial("udp", netip.AddrPortFrom(g.Addr, DNSPort).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ask := func(name string) dnsmessage.Message {
		t.Helper()
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 9, RecursionDesired: true})
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
		q, _ := b.Finish()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(q); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 512)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var m dnsmessage.Message
		if err := m.Unpack(buf[:n]); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := ask("api.allowed.test."); len(m.Answers) != 1 || m.Answers[0].Body.(*dnsmessage.AResource).A != g.Addr.As4() {
		t.Fatalf("allowed: %+v", m)
	}
	if m := ask("evil.test."); m.RCode != dnsmessage.RCodeNameError || len(m.Answers) != 0 {
		t.Fatalf("refused: %+v", m)
	}
	if e := ev.wait(t, 1)[0]; e.Host != "evil.test" || e.Verdict != "refused" || e.Via != "dns" {
		t.Fatalf("event: %+v", e)
	}
}

// A connection made before the gateway runs waits for it (the cage starts
// beside its gateway, not after it).
func TestShimWaitsForGateway(t *testing.T) {
	fn := testNet(t)
	p, _ := ParsePolicy([]string{"api.allowed.test:7000"}, true)
	g := &Gateway{Policy: p, Addr: loopback(), Resolver: fn}
	upR, upW := io.Pipe()
	downR, downW := io.Pipe()
	gate := make(chan struct{})
	s := &Shim{Addr: g.Addr, Ports: p.Ports(), Dial: func() (io.ReadWriteCloser, error) {
		<-gate // as the pipes' open blocks until the gateway opens its end
		return Conn(downR, upW), nil
	}}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer g.Close()
	c, err := net.Dial("tcp", netip.AddrPortFrom(g.Addr, 7000).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(200 * time.Millisecond)
	close(gate)
	go g.Serve(Conn(upR, downW))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "hello from api.allowed.test\n" {
		t.Fatalf("%q, %v", line, err)
	}
}

// The named pipes as a session uses them: made open to every user, each
// end's opens wait for the other's, and a connection goes through.
func TestPipesCarryASession(t *testing.T) {
	dir := t.TempDir()
	if err := MakePipes(dir); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{PipeUp, PipeDown} {
		st, err := os.Stat(filepath.Join(dir, n))
		if err != nil || st.Mode()&os.ModeNamedPipe == 0 || st.Mode().Perm() != 0o666 {
			t.Fatalf("%s: %v, %v", n, st.Mode(), err)
		}
	}
	fn := testNet(t)
	p, _ := ParsePolicy([]string{"api.allowed.test:7000"}, true)
	g := &Gateway{Policy: p, Addr: loopback(), Resolver: fn}
	defer g.Close()
	go func() {
		conn, err := OpenGatewayPipes(dir)
		if err != nil {
			t.Error(err)
			return
		}
		g.Serve(conn)
	}()
	s := &Shim{Addr: g.Addr, Ports: p.Ports(), Dial: func() (io.ReadWriteCloser, error) { return OpenShimPipes(dir) }}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.Dial("tcp", netip.AddrPortFrom(g.Addr, 7000).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	if line, err := br.ReadString('\n'); err != nil || line != "hello from api.allowed.test\n" {
		t.Fatalf("%q, %v", line, err)
	}
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i)
	}
	go c.Write(big)
	got := make([]byte, len(big))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != string(big) {
		t.Fatalf("echo of 3 MiB: %v", err)
	}
}
