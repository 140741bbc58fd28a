package egress

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Answer builds the reply to one DNS query from the cage: an allowed name's
// A record is the shim's address in the cage (so its connections come to
// the shim, which carries them to the gateway, which decides by name); an allowed name has no other records; any
// other name is NXDOMAIN. It returns the refused name, if any, and nil for a
// packet that is not a query worth answering.
func (g *Gateway) Answer(query []byte) (reply []byte, refused string) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil, ""
	}
	q, err := p.Question()
	if err != nil {
		return nil, ""
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	allowed := h.OpCode == 0 && q.Class == dnsmessage.ClassINET && g.Policy.NameAllowed(name)
	if !allowed {
		if h.OpCode != 0 {
			rh.RCode = dnsmessage.RCodeNotImplemented
		} else {
			rh.RCode = dnsmessage.RCodeNameError
			refused = name
		}
	}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, ""
	}
	if err := b.Question(q); err != nil {
		return nil, ""
	}
	addr := g.Addr
	if !addr.IsValid() {
		addr = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	if allowed && q.Type == dnsmessage.TypeA && addr.Is4() {
		if err := b.StartAnswers(); err != nil {
			return nil, ""
		}
		rr := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5}
		if err := b.AResource(rr, dnsmessage.AResource{A: addr.As4()}); err != nil {
			return nil, ""
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil, ""
	}
	return out, refused
}

// dnsRefused reports a refused name once per session: resolvers ask for A
// and AAAA and retry, and one attempt should be one record.
func (g *Gateway) dnsRefused(name string) {
	n, err := NormalName(name)
	if err != nil {
		n = "" // only a checked name is reported: the event reaches a terminal
	}
	name = n
	g.mu.Lock()
	seen := g.dnsSeen[name]
	if !seen && len(g.dnsSeen) < 4096 {
		g.dnsSeen[name] = true
	}
	g.mu.Unlock()
	if !seen {
		g.emit(Event{Host: name, Verdict: "refused", Reason: "not an allowed host", Via: "dns"})
	}
}

// serveDNSConn answers DNS over TCP on c (a stream of the session) until
// it ends or idles for 10 s.
func (g *Gateway) serveDNSConn(c net.Conn) {
	if !g.hold(c, true) {
		return
	}
	defer g.release(c, true)
	for {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		reply, refused := g.Answer(q)
		if refused != "" {
			g.dnsRefused(refused)
		}
		if reply == nil {
			return
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(reply)))
		if _, err := c.Write(append(out, reply...)); err != nil {
			return
		}
	}
}
