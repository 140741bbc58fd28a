package egress

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// Shim is the cage's end of the gateway (see mux.go): it listens on the
// cage's loopback address for DNS (UDP and TCP), the proxy port and each
// allowed port, and carries each connection to the gateway as a stream.
// It decides nothing: what the gateway refuses, the cage cannot reach
// whatever the shim does.
type Shim struct {
	Addr  netip.Addr // where it listens (127.0.0.1 in the cage)
	Ports []int      // the policy's ports; DNSPort and ProxyPort are added
	// Dial opens the session's connection (the two pipes). It may block
	// until the gateway opens its end; a session that ends is dialled anew.
	Dial func() (io.ReadWriteCloser, error)
	// Wait bounds how long a connection waits for the gateway; 0: 15 s.
	Wait time.Duration

	mu      sync.Mutex
	sess    *yamux.Session
	changed chan struct{} // closed when sess changes
	closing bool
	closers []io.Closer
	wg      sync.WaitGroup
}

// ShimPorts are the TCP ports a shim for p listens on, sorted.
func ShimPorts(ports []int) []int {
	all := append([]int{DNSPort, ProxyPort}, ports...)
	slices.Sort(all)
	return slices.Compact(all)
}

// Listen opens every listener, then starts the session in the background.
func (s *Shim) Listen() error {
	s.mu.Lock()
	s.changed = make(chan struct{})
	s.mu.Unlock()
	for _, p := range ShimPorts(s.Ports) {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(s.Addr, uint16(p)).String())
		if err != nil {
			s.Close()
			return fmt.Errorf("cannot listen on port %d: %w", p, err)
		}
		s.closers = append(s.closers, ln)
		s.wg.Add(1)
		go s.accept(ln, p)
	}
	pc, err := net.ListenPacket("udp", netip.AddrPortFrom(s.Addr, DNSPort).String())
	if err != nil {
		s.Close()
		return fmt.Errorf("cannot listen for DNS: %w", err)
	}
	s.closers = append(s.closers, pc)
	s.wg.Add(2)
	go s.serveUDP(pc)
	go s.keep()
	return nil
}

// Close stops the listeners and the session.
func (s *Shim) Close() error {
	s.mu.Lock()
	s.closing = true
	for _, c := range s.closers {
		c.Close()
	}
	if s.sess != nil {
		s.sess.Close()
	}
	s.mu.Unlock()
	return nil
}

// keep dials the session, and dials it anew when it ends.
func (s *Shim) keep() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		closing := s.closing
		s.mu.Unlock()
		if closing {
			return
		}
		conn, err := s.Dial()
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		sess, err := yamux.Client(conn, muxConfig())
		if err != nil {
			conn.Close()
			continue
		}
		s.set(sess)
		<-sess.CloseChan()
		s.set(nil)
	}
}

func (s *Shim) set(sess *yamux.Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing && sess != nil {
		sess.Close()
		sess = nil
	}
	s.sess = sess
	close(s.changed)
	s.changed = make(chan struct{})
}

// open opens a stream to port, waiting for the session up to ctx.
func (s *Shim) open(ctx context.Context, port int) (net.Conn, error) {
	for {
		s.mu.Lock()
		sess, changed, closing := s.sess, s.changed, s.closing
		s.mu.Unlock()
		if closing {
			return nil, net.ErrClosed
		}
		if sess != nil {
			st, err := sess.OpenStream()
			if err == nil {
				if _, err := st.Write(streamHeader(port)); err != nil {
					st.Close()
					return nil, err
				}
				return st, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, errors.New("the egress gateway did not answer")
		}
	}
}

func (s *Shim) wait() time.Duration {
	if s.Wait > 0 {
		return s.Wait
	}
	return 15 * time.Second
}

func (s *Shim) accept(ln net.Listener, port int) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		go s.carry(c, port)
	}
}

// carry copies one connection both ways through a stream.
func (s *Shim) carry(c net.Conn, port int) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), s.wait())
	st, err := s.open(ctx, port)
	cancel()
	if err != nil {
		return
	}
	defer st.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(st, c)
		st.Close() // yamux: a FIN, the other way stays open
	}()
	_, _ = io.Copy(c, st)
	closeWrite(c)
	<-done
}

// serveUDP carries each DNS query as DNS over TCP on a stream of its own.
func (s *Shim) serveUDP(pc net.PacketConn) {
	defer s.wg.Done()
	sem := make(chan struct{}, 64)
	for {
		buf := make([]byte, 4096)
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		select {
		case sem <- struct{}{}:
		default:
			continue // too many in flight: the resolver retries
		}
		go func() {
			defer func() { <-sem }()
			if reply, err := s.exchange(buf[:n]); err == nil {
				_, _ = pc.WriteTo(reply, from)
			}
		}()
	}
}

// exchange sends one query and reads its reply.
func (s *Shim) exchange(q []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := s.open(ctx, DNSPort)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(5 * time.Second))
	msg := binary.BigEndian.AppendUint16(nil, uint16(len(q)))
	if _, err := st.Write(append(msg, q...)); err != nil {
		return nil, err
	}
	var l [2]byte
	if _, err := io.ReadFull(st, l[:]); err != nil {
		return nil, err
	}
	reply := make([]byte, binary.BigEndian.Uint16(l[:]))
	if _, err := io.ReadFull(st, reply); err != nil {
		return nil, err
	}
	return reply, nil
}
