package cage

import (
	"os"
	"strconv"
	"strings"
)

// Labels on every cage container. The owner labels identify the mcpcage
// process that started it so orphans can be told from live cages: a pid alone
// can be reused, so the process start time (clock ticks since boot, from
// /proc) and the boot id go with it, and the host name keeps one machine from
// reaping another's cages on a shared engine. The pid namespace goes with
// them too: an mcpcage in a container or another pid namespace (same host
// name, same kernel) numbers its processes differently, so its pid means
// nothing here and its cages are left alone.
const (
	LabelCage       = "io.mcpcage.cage" // "1" on every cage
	LabelName       = "io.mcpcage.name"
	LabelSession    = "io.mcpcage.session"
	LabelImage      = "io.mcpcage.image" // the image as named by the user or the install phase
	LabelOwnerHost  = "io.mcpcage.owner.host"
	LabelOwnerBoot  = "io.mcpcage.owner.boot"
	LabelOwnerPID   = "io.mcpcage.owner.pid"
	LabelOwnerStart = "io.mcpcage.owner.start"
	LabelOwnerPIDNS = "io.mcpcage.owner.pidns"
)

// Owner identifies a process on a machine across pid reuse and reboots.
type Owner struct {
	Host  string
	Boot  string // boot id; "" where the system has none we can read
	PID   int
	Start string // process start time in clock ticks since boot; "" when unknown
	PIDNS string // the pid namespace, as /proc/self/ns/pid names it; "" when unknown (older labels too)
}

// Self is the current process as an Owner.
func Self() Owner {
	h, _ := os.Hostname()
	pid := os.Getpid()
	return Owner{Host: h, Boot: bootID(), PID: pid, Start: procStart(pid), PIDNS: pidNamespace()}
}

// Labels are o's owner labels, for every container mcpcage starts (the
// install phase's too), so that Reap can tell when o is gone.
func (o Owner) Labels() map[string]string {
	return map[string]string{
		LabelOwnerHost:  o.Host,
		LabelOwnerBoot:  o.Boot,
		LabelOwnerPID:   strconv.Itoa(o.PID),
		LabelOwnerStart: o.Start,
		LabelOwnerPIDNS: o.PIDNS,
	}
}

func ownerFromLabels(l map[string]string) Owner {
	pid, _ := strconv.Atoi(l[LabelOwnerPID])
	return Owner{Host: l[LabelOwnerHost], Boot: l[LabelOwnerBoot], PID: pid, Start: l[LabelOwnerStart], PIDNS: l[LabelOwnerPIDNS]}
}

// OwnerState says what is known of a cage's owner from this process.
type OwnerState int

const (
	OwnerAlive   OwnerState = iota + 1
	OwnerGone               // the process that started the cage no longer runs: an orphan
	OwnerUnknown            // started from another machine or pid namespace: left alone
)

func (s OwnerState) String() string {
	switch s {
	case OwnerAlive:
		return "alive"
	case OwnerGone:
		return "gone"
	}
	return "unknown"
}

// State tells whether o still runs, seen from the current machine.
func (o Owner) State() OwnerState {
	me := Self()
	if o.Host == "" || o.Host != me.Host || o.PID <= 0 {
		return OwnerUnknown
	}
	if o.Boot != "" && me.Boot != "" && o.Boot != me.Boot {
		return OwnerGone
	}
	if o.PIDNS != "" && me.PIDNS != "" && o.PIDNS != me.PIDNS {
		return OwnerUnknown // its pid is not ours to look up
	}
	if !processExists(o.PID) {
		return OwnerGone
	}
	if o.Start != "" {
		if s := procStart(o.PID); s != "" && s != o.Start {
			return OwnerGone // the pid was reused
		}
	}
	return OwnerAlive
}

// pidNamespace names the current pid namespace ("pid:[4026531836]"); "" where
// /proc does not say.
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procStart reads field 22 (starttime) of /proc/PID/stat. The command name
// (field 2) may hold spaces and parentheses, so fields are counted after the
// last ')'.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	k := strings.LastIndexByte(s, ')')
	if k < 0 {
		return ""
	}
	f := strings.Fields(s[k+1:])
	// After ')': field 3 (state) is f[0], so field 22 is f[19].
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
