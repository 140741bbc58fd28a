package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ProxyPort is where the gateway also listens for servers that honour
// HTTPS_PROXY / HTTP_PROXY.
const ProxyPort = 3128

// Event is one connection attempt (or one refused DNS name), as the gateway
// reports it: one JSON object per line on its output.
type Event struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Verdict  string `json:"verdict"` // allowed or refused
	Reason   string `json:"reason,omitempty"`
	Via      string `json:"via"`            // dns, connect, proxy, sni, host, port
	Addr     string `json:"addr,omitempty"` // the upstream address dialled
	Sent     int64  `json:"sent"`           // bytes from the server to the host
	Received int64  `json:"received"`       // bytes from the host to the server
	MS       int64  `json:"ms"`             // duration of the connection
	// Phase is "open" for the report an allowed connection gets when it
	// is allowed (before a byte passes) and "end" for the one it gets
	// when it ends; "" for a refusal, reported once.
	Phase string `json:"phase,omitempty"`
}

// Resolver resolves a name to addresses (net.DefaultResolver in the gateway
// container; a fake in tests).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Gateway serves one cage, over the session Serve runs (see mux.go).
type Gateway struct {
	Policy Policy
	// Addr is what every allowed name resolves to in the cage: the shim's
	// address there (127.0.0.1); the zero Addr means that.
	Addr     netip.Addr
	Resolver Resolver // nil: net.DefaultResolver
	// Dial dials the upstream; nil: a net.Dialer with a 10 s timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Events receives every event; it must not block for long.
	Events func(Event)
	// Roots verify the hosts the gateway itself speaks TLS to (Originate);
	// nil: the system's.
	Roots *x509.CertPool

	mu       sync.Mutex
	conns    map[*tracked]struct{}
	dnsSeen  map[string]bool
	closing  bool
	wg       sync.WaitGroup
	held     map[io.Closer]struct{} // sessions and DNS streams, for Close
	sessions int                    // the sessions among held
}

// tracked is one open connection, so Close can report it.
type tracked struct {
	ev       Event
	start    time.Time
	down, up net.Conn
	sent     atomic.Int64
	received atomic.Int64
	once     sync.Once
}

// JSONEvents writes events as JSON lines to w (the gateway's stdout).
func JSONEvents(w io.Writer) func(Event) {
	var mu sync.Mutex
	return func(e Event) {
		b, _ := json.Marshal(e)
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write(append(b, '\n'))
	}
}

// setup makes the maps; g.mu is held.
func (g *Gateway) setup() {
	if g.conns == nil {
		g.conns = map[*tracked]struct{}{}
		g.dnsSeen = map[string]bool{}
		g.held = map[io.Closer]struct{}{}
	}
}

// Close ends the sessions and every open connection and reports each one
// (with the bytes so far), then returns once all are reported.
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.setup()
	g.closing = true
	for c := range g.held {
		c.Close()
	}
	// t.up is set under g.mu (handle), so it is read under it too.
	open := make([]net.Conn, 0, 2*len(g.conns))
	for t := range g.conns {
		open = append(open, t.down)
		if t.up != nil {
			open = append(open, t.up)
		}
	}
	g.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
	g.wg.Wait()
	return nil
}

func (g *Gateway) emit(e Event) {
	if g.Events != nil {
		g.Events(e.Bounded())
	}
}

// maxStreams bounds the streams the gateway serves at once (connections
// and DNS streams): each may hold a sniff buffer (64 KiB) and what the
// multiplexer buffers for it (256 KiB), and the gateway has 64 MiB. A
// stream past it is refused, and reported.
const maxStreams = 48

// hold keeps c for Close to close; once the gateway is closing it closes c
// and returns false instead. release undoes it and closes c.
func (g *Gateway) hold(c io.Closer, stream bool) bool {
	g.mu.Lock()
	g.setup()
	if g.closing {
		g.mu.Unlock()
		c.Close()
		return false
	}
	if stream && g.streams() >= maxStreams {
		g.mu.Unlock()
		c.Close()
		g.emit(Event{Port: DNSPort, Verdict: "refused", Via: "dns", Reason: tooMany})
		return false
	}
	g.held[c] = struct{}{}
	if !stream {
		g.sessions++
	}
	g.mu.Unlock()
	return true
}

// streams counts the streams open: connections and DNS streams (the held
// closers but the sessions). g.mu is held.
func (g *Gateway) streams() int { return len(g.conns) + len(g.held) - g.sessions }

// tooMany is the reason a stream past maxStreams is refused with.
var tooMany = "more than " + strconv.Itoa(maxStreams) + " connections at once"

func (g *Gateway) release(c io.Closer, stream bool) {
	g.mu.Lock()
	if _, ok := g.held[c]; ok && !stream {
		g.sessions--
	}
	delete(g.held, c)
	g.mu.Unlock()
	c.Close()
}

// track keeps t for Close to report. It reports false when the gateway is
// closing (t is not reported) or, with full set, when maxStreams are open
// (t is reported as refused).
func (g *Gateway) track(t *tracked) (ok, full bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setup()
	if g.closing {
		return false, false
	}
	if g.streams() >= maxStreams {
		return false, true
	}
	g.conns[t] = struct{}{}
	return true, false
}

// finish reports t once.
func (g *Gateway) finish(t *tracked) {
	t.once.Do(func() {
		g.mu.Lock()
		delete(g.conns, t)
		g.mu.Unlock()
		t.ev.Sent, t.ev.Received = t.sent.Load(), t.received.Load()
		t.ev.MS = time.Since(t.start).Milliseconds()
		g.emit(t.ev)
	})
}

func (g *Gateway) handle(c net.Conn, port int) {
	t := &tracked{start: time.Now(), down: c, ev: Event{Port: port}}
	defer c.Close()
	if ok, full := g.track(t); !ok {
		if full {
			g.emit(Event{Port: port, Verdict: "refused", Via: "port", Reason: tooMany})
		}
		return
	}
	defer g.finish(t)
	refuse := func(reason string) {
		t.ev.Verdict, t.ev.Reason = "refused", reason
	}
	wait := 10 * time.Second
	if _, ok := g.Policy.ByPort(port); ok {
		// The port alone names the host: a protocol whose server
		// speaks first is not kept waiting for long.
		wait = 250 * time.Millisecond
	}
	s, err := Sniff(c, wait)
	if err != nil {
		t.ev.Via = "port"
		refuse("could not read the start of the connection: " + err.Error())
		return
	}
	t.ev.Via = s.Via
	if s.Port != 0 {
		t.ev.Port = s.Port
	} else if port == ProxyPort && !portAllowed(g.Policy, port) {
		refuse("not an HTTP proxy request (the proxy port)")
		return
	}
	host := s.Host
	if host == "" {
		h, ok := g.Policy.ByPort(t.ev.Port)
		if !ok {
			refuse("the protocol names no host and no single allowed name has port " + strconv.Itoa(t.ev.Port))
			return
		}
		host = h
	}
	n, err := NormalName(host)
	if err != nil {
		// Only a checked name is reported: the event reaches a terminal.
		refuse("the name it gives is not a valid host name")
		return
	}
	t.ev.Host = n
	if !g.Policy.Allowed(host, t.ev.Port) {
		refuse("not an allowed host")
		if s.Connect {
			_, _ = io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		}
		return
	}
	up, addr, err := g.dialUpstream(t.ev.Host, t.ev.Port)
	t.ev.Addr = addr
	if err != nil {
		refuse(err.Error())
		if s.Connect {
			_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		}
		return
	}
	g.mu.Lock()
	t.up = up
	closing := g.closing
	g.mu.Unlock()
	defer up.Close()
	if closing {
		refuse("the session ended")
		return
	}
	if s.Originate {
		tc := tls.Client(up, &tls.Config{ServerName: t.ev.Host, RootCAs: g.Roots, MinVersion: tls.VersionTLS12})
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			refuse("TLS to the host failed: " + err.Error())
			_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		_ = tc.SetDeadline(time.Time{})
		up = tlsConn{tc}
		defer up.Close()
	}
	t.ev.Verdict = "allowed"
	// Reported now, before a byte passes, and again when it ends: a
	// connection that uploads and is cut (the gateway killed) is on
	// record all the same.
	open := t.ev
	open.Phase = "open"
	g.emit(open)
	t.ev.Phase = "end"
	if s.Connect {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
	}
	if len(s.Rest) > 0 {
		n, err := up.Write(s.Rest)
		t.sent.Add(int64(n))
		if err != nil {
			return
		}
	}
	splice(c, up, &t.sent, &t.received)
}

func portAllowed(p Policy, port int) bool {
	for _, r := range p.Rules {
		if r.Port == port {
			return true
		}
	}
	return false
}

// dialUpstream resolves host itself and dials the first address that the
// policy accepts: the address checked is the address dialled.
func (g *Gateway) dialUpstream(host string, port int) (net.Conn, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var res Resolver = net.DefaultResolver
	if g.Resolver != nil {
		res = g.Resolver
	}
	addrs, err := res.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return nil, "", fmt.Errorf("%s does not resolve upstream", host)
	}
	dial := g.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second}
		dial = d.DialContext
	}
	var lastErr error
	refused := ""
	for _, a := range addrs {
		a = a.Unmap()
		if !g.Policy.AllowPrivate && !Public(a) {
			refused = a.String()
			continue
		}
		ap := netip.AddrPortFrom(a, uint16(port)).String()
		c, err := dial(ctx, "tcp", ap)
		if err == nil {
			return c, ap, nil
		}
		lastErr = err
	}
	if lastErr != nil {
		return nil, "", fmt.Errorf("cannot connect to %s:%d: %v", host, port, lastErr)
	}
	return nil, refused, fmt.Errorf("%s resolves to the private address %s (allowed only with --allow-private-addresses)", host, refused)
}

// splice copies both ways until both sides are done, counting the bytes
// as they are read, so a report made while a copy is cut short (Close)
// still has them: a write to a stream whose session is shutting down may
// say 0 for bytes the shim already passed on. Close ends the copies by
// ending the session and closing the upstream connection.
func splice(down, up net.Conn, sent, received *atomic.Int64) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(up, counting{down, sent})
		closeWrite(up)
	}()
	_, _ = io.Copy(down, counting{up, received})
	closeWrite(down)
	wg.Wait()
}

// counting is a reader that adds what it reads to n.
type counting struct {
	r io.Reader
	n *atomic.Int64
}

func (c counting) Read(b []byte) (int, error) {
	k, err := c.r.Read(b)
	c.n.Add(int64(k))
	return k, err
}

// tlsConn lets a TLS client connection be half-closed like a TCP one.
type tlsConn struct{ *tls.Conn }

func (c tlsConn) CloseWrite() error { return c.Conn.CloseWrite() }

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// GatewayCommand is mcpcage's hidden subcommand that runs a Gateway.
const GatewayCommand = "egress-gateway"

// ShimCommand is mcpcage's hidden subcommand that runs a Shim in the cage,
// then the server.
const ShimCommand = "egress-shim"

// Ready is the gateway's first output line: it runs, and waits for the
// shim on the pipes named.
type Ready struct {
	Ready string `json:"ready"`
}
