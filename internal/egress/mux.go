package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/yamux"
)

// The cage and its gateway share no network. The cage has a loopback
// interface only; a shim inside it (Shim) listens there for DNS, the proxy
// port and each allowed port, and carries every connection it accepts to the
// gateway as one stream of a multiplexed session (yamux) over two named
// pipes in a folder that both containers mount read-only: PipeUp (shim to
// gateway) and PipeDown. A stream starts with two bytes, the port the shim
// accepted it on (big-endian); the gateway treats the rest as a connection
// to that port of its own. DNS queries the shim received over UDP come as
// DNS over TCP on port 53.
//
// Everything that comes down the pipes is the cage's, hence hostile: the
// shim runs as the server's user and the server can replace it. The gateway
// decides on each stream as it would on a connection, closes a stream whose
// port it does not serve, and bounds what the session may queue.

// PipeUp and PipeDown are the names of the two pipes in the session's folder.
const (
	PipeUp   = "up"
	PipeDown = "down"
)

// DNSPort is where the shim answers the cage's resolver.
const DNSPort = 53

// muxConfig is the session's multiplexer, on both ends.
func muxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.AcceptBacklog = 64
	c.EnableKeepAlive = false
	c.MaxStreamWindowSize = 1 << 20
	c.StreamOpenTimeout = 15 * time.Second
	c.StreamCloseTimeout = 30 * time.Second
	c.ConnectionWriteTimeout = 30 * time.Second
	c.LogOutput = io.Discard
	return c
}

// pipePair is the two pipes as one connection.
type pipePair struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (p pipePair) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipePair) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipePair) Close() error {
	rerr := p.r.Close()
	if err := p.w.Close(); err != nil {
		return err
	}
	return rerr
}

// Conn joins a reader and a writer into the connection Serve and
// Shim.Dial take (the two pipes; in tests, two io.Pipes).
func Conn(r io.ReadCloser, w io.WriteCloser) io.ReadWriteCloser { return pipePair{r, w} }

// streamHeader is what a stream starts with: the port.
func streamHeader(port int) []byte {
	return binary.BigEndian.AppendUint16(nil, uint16(port))
}

// ReadStreamPort reads a stream's header: the port the shim accepted it on.
// It is the cage's word: the caller checks it against what it serves.
func ReadStreamPort(r io.Reader) (int, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, fmt.Errorf("no stream header: %w", err)
	}
	p := int(binary.BigEndian.Uint16(h[:]))
	if p == 0 {
		return 0, errors.New("stream header names port 0")
	}
	return p, nil
}

// Serve runs the gateway end of one session over conn (the two pipes): each
// stream the shim opens is served as a connection to its port. It returns
// when the session ends (the shim closed its pipe, or Close).
func (g *Gateway) Serve(conn io.ReadWriteCloser) error {
	sess, err := yamux.Server(conn, muxConfig())
	if err != nil {
		conn.Close()
		return err
	}
	if !g.hold(sess, false) {
		return net.ErrClosed
	}
	defer g.release(sess, false)
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			return err
		}
		g.mu.Lock()
		if g.closing {
			g.mu.Unlock()
			st.Close()
			return net.ErrClosed
		}
		g.wg.Add(1)
		g.mu.Unlock()
		go func() {
			defer g.wg.Done()
			g.stream(st)
		}()
	}
}

// stream serves one stream: its header, then the connection.
func (g *Gateway) stream(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	port, err := ReadStreamPort(c)
	if err != nil {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	switch {
	case port == DNSPort:
		g.serveDNSConn(c)
	case g.serves(port):
		g.handle(c, port)
	default:
		// Not a port the shim listens on: only a replaced shim sends it.
		c.Close()
	}
}

// serves says whether the gateway takes connections to port: the policy's
// ports and the proxy port.
func (g *Gateway) serves(port int) bool {
	if port == ProxyPort {
		return true
	}
	return portAllowed(g.Policy, port)
}
