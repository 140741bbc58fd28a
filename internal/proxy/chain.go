package proxy

import "github.com/mcpcage/mcpcage/internal/jsonrpc"

// inspect runs the policy chain on ev and applies the verdict, now or, for
// an Async verdict, from a goroutine the session owns.
func (r *run) inspect(ev *Event) {
	for i, p := range r.cfg.Policies {
		v := p.Inspect(r.ctx, r.sess, ev)
		if v.Async != nil {
			rest := r.cfg.Policies[i+1:]
			r.goAsync(func() {
				v := v.Async(r.ctx)
				if v.Action == Forward && v.Async == nil {
					v = r.chain(rest, ev)
				}
				r.finish(ev, false, v)
			})
			return
		}
		if v.Action != Forward {
			r.finish(ev, true, v)
			return
		}
	}
	r.finish(ev, true, Verdict{})
}

// chain runs the rest of the policies once an Async verdict said Forward;
// being already off the pump, it runs further Async work inline.
func (r *run) chain(ps []Policy, ev *Event) Verdict {
	for _, p := range ps {
		v := p.Inspect(r.ctx, r.sess, ev)
		if v.Async != nil {
			v = v.Async(r.ctx)
		}
		if v.Action != Forward {
			return v
		}
	}
	return Verdict{}
}

// finish applies a verdict: observers first, synchronously, then delivery.
// sync is true on the pump that read ev, false on an Async goroutine.
func (r *run) finish(ev *Event, sync bool, v Verdict) {
	flush := !sync
	v.Async = nil
	if (v.Action == Reply || v.Action == Replace) && !validMessage(v.Message) {
		r.logf("a policy gave an invalid message for %s; dropping it", describe(ev))
		v = Verdict{Action: Drop}
	}
	for _, o := range r.observers {
		o.Observe(r.ctx, r.sess, ev, v)
	}
	out, msg := ev.Msg.Raw, ev.Msg
	if v.Action == Drop || v.Action == Reply {
		// Nothing goes on to the other peer: the holds are waited for here.
		d := delivery{out: v.Message, holds: ev.holds}
		r.waitHolds(&d)
		v.Message = d.out
	}
	switch v.Action {
	case Drop:
		return
	case Reply:
		switch {
		case sync:
			r.replyLater(ev.Dir, v.Message)
		case ev.Dir == ClientToServer:
			r.writeClient(v.Message, true)
		default:
			r.writeServer(v.Message, true)
		}
		return
	case Replace:
		out, msg = v.Message, nil
	}
	r.deliver(ev, out, msg, flush)
}

func validMessage(b []byte) bool {
	_, err := jsonrpc.Parse(b)
	return err == nil
}

func describe(ev *Event) string {
	if ev.Msg.Method != "" {
		return clip(ev.Msg.Method)
	}
	if ev.Method != "" {
		return "the response to " + clip(ev.Method)
	}
	return "a message"
}
