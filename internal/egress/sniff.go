package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxSniff bounds what the gateway reads before it has a name: a ClientHello
// with post-quantum key shares is a few KiB, an HTTP head a few more.
const maxSniff = 64 << 10

// Sniffed is what the first bytes of a connection say about where it goes.
type Sniffed struct {
	Host string // "" when the protocol names none
	Port int    // 0: the port the cage connected to
	Via  string // connect, proxy, sni, host or port
	// Connect is an HTTP CONNECT: the gateway answers it and the rest of
	// the stream (Rest) is the tunnel.
	Connect bool
	// Originate is a plain-text proxy request for an https:// URL (what
	// axios sends through HTTPS_PROXY): the gateway speaks TLS upstream.
	Originate bool
	// Rest is what must reach the upstream before the rest of the stream:
	// the bytes read so far (all of them, or for CONNECT what followed it).
	Rest []byte
}

// recorder keeps every byte read through it, up to maxSniff.
type recorder struct {
	r   io.Reader
	buf bytes.Buffer
}

var errTooLong = errors.New("no name in the first 64 KiB")

func (r *recorder) Read(p []byte) (int, error) {
	if r.buf.Len() >= maxSniff {
		return 0, errTooLong
	}
	if room := maxSniff - r.buf.Len(); len(p) > room {
		p = p[:room]
	}
	n, err := r.r.Read(p)
	r.buf.Write(p[:n])
	return n, err
}

// Sniff reads the start of a connection (through c's deadlines) and finds
// the name it is for. wait bounds the wait for the first byte: a protocol
// whose server speaks first sends nothing, which is not an error (Via
// "port"). A read error after the first byte is returned.
func Sniff(c net.Conn, wait time.Duration) (Sniffed, error) {
	rec := &recorder{r: c}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	var first [1]byte
	n, err := io.ReadFull(rec, first[:])
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	if n == 0 {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return Sniffed{Via: "port"}, nil
		}
		return Sniffed{}, err
	}
	src := io.MultiReader(bytes.NewReader(first[:]), rec.r)
	rec2 := &recorder{r: src}
	var s Sniffed
	switch {
	case first[0] == 0x16: // TLS handshake record
		s.Host = clientHelloName(rec2)
		s.Via = "sni"
	case first[0] >= 'A' && first[0] <= 'Z':
		s, err = sniffHTTP(rec2)
		if err != nil {
			return Sniffed{}, err
		}
	}
	if s.Host == "" {
		s.Via = "port"
	}
	if !s.Connect {
		s.Rest = rec2.buf.Bytes()
	}
	return s, nil
}

// clientHelloName parses a TLS ClientHello with crypto/tls's own parser
// (stopping it once the hello is read) and returns its SNI name.
func clientHelloName(r io.Reader) string {
	var name string
	stop := errors.New("stop")
	conn := tls.Server(readOnlyConn{r: r}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			name = h.ServerName
			return nil, stop
		},
	})
	_ = conn.Handshake()
	return name
}

// sniffHTTP reads one HTTP request head: a proxy request names its target,
// an origin request its Host.
func sniffHTTP(rec *recorder) (Sniffed, error) {
	br := bufio.NewReaderSize(rec, 4096)
	req, err := http.ReadRequest(br)
	if err != nil {
		// Not HTTP after all (or not one we can read): a raw protocol.
		return Sniffed{}, nil
	}
	if req.Method == http.MethodConnect {
		host, port, ok := splitHostPort(req.RequestURI, 0)
		if !ok {
			return Sniffed{}, errors.New("CONNECT without host:port")
		}
		rest, _ := br.Peek(br.Buffered())
		return Sniffed{Host: host, Port: port, Via: "connect", Connect: true, Rest: append([]byte(nil), rest...)}, nil
	}
	if req.URL != nil && req.URL.IsAbs() {
		def := 80
		switch req.URL.Scheme {
		case "http":
		case "https":
			def = 443
		default:
			return Sniffed{}, errors.New("a proxy request for " + req.URL.Scheme + " (only http://, https:// and CONNECT)")
		}
		host, port, ok := splitHostPort(req.URL.Host, def)
		if !ok {
			return Sniffed{}, errors.New("a proxy request without a host")
		}
		return Sniffed{Host: host, Port: port, Via: "proxy", Originate: def == 443}, nil
	}
	host, _, ok := splitHostPort(req.Host, -1)
	if !ok {
		return Sniffed{}, nil
	}
	return Sniffed{Host: host, Via: "host"}, nil
}

// splitHostPort reads host[:port]; def is the port when none is given
// (-1: keep 0, the connection's own port; 0: a port is required).
func splitHostPort(s string, def int) (string, int, bool) {
	host, ps, err := net.SplitHostPort(s)
	if err != nil {
		if def == 0 || strings.Contains(s, ":") && !strings.HasPrefix(s, "[") {
			return "", 0, false
		}
		host, ps = strings.Trim(s, "[]"), ""
	}
	port := max(def, 0)
	if ps != "" {
		p, err := strconv.Atoi(ps)
		if err != nil || p < 1 || p > 65535 {
			return "", 0, false
		}
		port = p
	}
	if host == "" || !hostChars(host) {
		return "", 0, false
	}
	return host, port, true
}

// hostChars reports whether h holds only what a host name or an IP address
// is written with: a name the client sent with spaces, controls or other
// bytes (an obsolete folded Host header gives "name " from "name\r\n ")
// names no host, so the connection is decided as if it had named none.
func hostChars(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}

// readOnlyConn lets crypto/tls read a ClientHello from r and write nothing.
type readOnlyConn struct {
	r io.Reader
	net.Conn
}

func (c readOnlyConn) Read(p []byte) (int, error)         { return c.r.Read(p) }
func (c readOnlyConn) Write(p []byte) (int, error)        { return 0, io.ErrClosedPipe }
func (c readOnlyConn) Close() error                       { return nil }
func (c readOnlyConn) LocalAddr() net.Addr                { return nil }
func (c readOnlyConn) RemoteAddr() net.Addr               { return nil }
func (c readOnlyConn) SetDeadline(t time.Time) error      { return nil }
func (c readOnlyConn) SetReadDeadline(t time.Time) error  { return nil }
func (c readOnlyConn) SetWriteDeadline(t time.Time) error { return nil }
