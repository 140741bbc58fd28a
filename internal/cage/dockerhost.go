package cage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// An engine is a container engine mcpcage knows: where its API socket is,
// and what of it a cage must never see. Every engine's socket is control of
// the host (or, rootless, of the user and their containers), so the sockets
// of every engine in the table are masked or refused, not only the one in
// use. A cage never reaches the host itself: its network is none, and the
// engine's name for the host (host.docker.internal, host.containers.internal,
// host.lima.internal) resolves to a private address the egress gateway
// refuses.
//
// Add an engine: one line in engines.
type engine struct {
	Name string
	// Sockets are where its API socket is, most usual first: absolute, or
	// under "~/" (the home) or "$XDG_RUNTIME_DIR/" (/run/user/UID when
	// unset).
	Sockets []string
	// System engines keep their sockets in the host's own folders: a mount
	// holding one is refused outright. A user's engine's socket folder is
	// refused, and masked in a folder above it (the home).
	System bool
	// Private are folders of the engine's besides its sockets' (its
	// runtime state, containerd's socket), kept from cages like them.
	Private []string
	// VM engines run their containers in a virtual machine: a named pipe
	// of this machine is not one of theirs, so the cage's stdio takes the
	// attach stream (stdioWay).
	VM bool
}

// engines is the table discovery (findDockerHost) and masking
// (engineSocketDirs, ResolveMount) read. DOCKER_HOST, then the Docker CLI's
// current context, win over it.
var engines = []engine{
	{Name: "Docker", Sockets: []string{"/var/run/docker.sock", "/run/docker.sock"}, System: true,
		Private: []string{"/var/run/docker", "/run/docker", "/run/containerd", "/var/run/containerd"}},
	{Name: "rootless Docker", Sockets: []string{"$XDG_RUNTIME_DIR/docker.sock"},
		Private: []string{"$XDG_RUNTIME_DIR/dockerd-rootless", "$XDG_RUNTIME_DIR/docker"}},
	{Name: "Docker Desktop", Sockets: []string{"~/.docker/run/docker.sock", "~/.docker/desktop/docker.sock"}, VM: true},
	{Name: "Colima", Sockets: []string{"~/.colima/default/docker.sock", "~/.config/colima/default/docker.sock"}, VM: true},
	{Name: "OrbStack", Sockets: []string{"~/.orbstack/run/docker.sock"}, VM: true},
	{Name: "Rancher Desktop", Sockets: []string{"~/.rd/docker.sock"}, VM: true},
	{Name: "Podman", Sockets: []string{"/run/podman/podman.sock", "/var/run/podman/podman.sock"}, System: true},
	{Name: "rootless Podman", Sockets: []string{"$XDG_RUNTIME_DIR/podman/podman.sock"}},
	{Name: "Podman machine", Sockets: []string{"~/.local/share/containers/podman/machine/podman.sock", "~/.local/share/containers/podman/machine/qemu/podman.sock"}, VM: true},
}

// expand resolves a table path for this user; "" when it cannot (no home).
func expand(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		home, _ := os.UserHomeDir()
		if home == "" {
			return ""
		}
		return filepath.Join(home, rest)
	}
	if rest, ok := strings.CutPrefix(p, "$XDG_RUNTIME_DIR/"); ok {
		d := os.Getenv("XDG_RUNTIME_DIR")
		if d == "" {
			d = "/run/user/" + strconv.Itoa(os.Getuid())
		}
		return filepath.Join(d, rest)
	}
	return p
}

// isSocket reports whether p is a Unix socket (symlinks followed).
func isSocket(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode()&os.ModeSocket != 0
}

// findDockerHost finds the engine when DOCKER_HOST is unset and the default
// socket is not there (or not this user's to use): the Docker CLI's current
// context (how Docker Desktop, Colima and rootless Docker are usually
// reached), then the first socket of the engine table this user may use.
// "" means the client's default.
func findDockerHost() string { return discover("/var/run/docker.sock", engines) }

// discover is findDockerHost with the default socket and the table given.
func discover(defaultSocket string, table []engine) string {
	if runtime.GOOS == "windows" || isSocket(defaultSocket) && mayConnect(defaultSocket) {
		return ""
	}
	home, _ := os.UserHomeDir()
	if h := contextHost(dockerConfigDir(home)); h != "" {
		return h
	}
	for _, e := range table {
		for _, s := range e.Sockets {
			if p := expand(s); p != "" && isSocket(p) && mayConnect(p) {
				return "unix://" + p
			}
		}
	}
	return ""
}

// engineInVM says whether the engine at a unix:// address is one of the
// table's that run their containers in a VM.
func engineInVM(host string) bool {
	name := engineName(host)
	for _, e := range engines {
		if e.Name == name && e.VM {
			return true
		}
	}
	return false
}

// engineName names the engine at a unix:// address from the table ("" when
// it is none of them), for messages.
func engineName(host string) string {
	p, ok := strings.CutPrefix(host, "unix://")
	if !ok {
		return ""
	}
	for _, e := range engines {
		for _, s := range e.Sockets {
			if x := expand(s); x != "" && filepath.Clean(x) == filepath.Clean(p) {
				return e.Name
			}
		}
	}
	return ""
}

// systemEnginePaths are the paths of the system engines (sockets and private
// folders) a mount may not hold at all.
func systemEnginePaths() []string {
	var out []string
	for _, e := range engines {
		if e.System {
			out = append(out, e.Sockets...)
			out = append(out, e.Private...)
		}
	}
	return out
}

// DockerSocketDirs returns the folders holding an engine's socket or state on
// this machine, symlinks resolved: the socket DOCKER_HOST names, the current
// context's, and every socket and private folder of the engine table that is
// there. A mounted folder must never show one (see MasksFor and
// ResolveMount): the socket is root on the host.
func DockerSocketDirs() []string {
	var dirs []string
	socket := func(p string) {
		if p != "" {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				dirs = append(dirs, filepath.Dir(r))
			}
		}
	}
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		socket(strings.TrimPrefix(h, "unix://"))
	}
	home, _ := os.UserHomeDir()
	if h := contextHost(dockerConfigDir(home)); strings.HasPrefix(h, "unix://") {
		socket(strings.TrimPrefix(h, "unix://"))
	}
	for _, e := range engines {
		for _, s := range e.Sockets {
			socket(expand(s))
		}
		for _, f := range e.Private {
			if p := expand(f); p != "" {
				if r, err := filepath.EvalSymlinks(p); err == nil {
					dirs = append(dirs, r)
				}
			}
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

func dockerConfigDir(home string) string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".docker")
}

// contextHost reads the Docker CLI's current context (DOCKER_CONTEXT, else
// currentContext in config.json) and returns its engine address; "" for the
// default context or when there is none.
func contextHost(configDir string) string {
	if configDir == "" {
		return ""
	}
	name := os.Getenv("DOCKER_CONTEXT")
	if name == "" {
		b, err := os.ReadFile(filepath.Join(configDir, "config.json"))
		if err != nil {
			return ""
		}
		var cfg struct {
			CurrentContext string `json:"currentContext"`
		}
		if json.Unmarshal(b, &cfg) != nil {
			return ""
		}
		name = cfg.CurrentContext
	}
	if name == "" || name == "default" {
		return ""
	}
	sum := sha256.Sum256([]byte(name))
	b, err := os.ReadFile(filepath.Join(configDir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json"))
	if err != nil {
		return ""
	}
	var meta struct {
		Endpoints map[string]struct {
			Host string `json:"Host"`
		} `json:"Endpoints"`
	}
	if json.Unmarshal(b, &meta) != nil {
		return ""
	}
	h := meta.Endpoints["docker"].Host
	if !strings.HasPrefix(h, "unix://") && !strings.HasPrefix(h, "tcp://") && !strings.HasPrefix(h, "npipe://") && !strings.HasPrefix(h, "ssh://") {
		return ""
	}
	if strings.HasPrefix(h, "ssh://") {
		// The API client cannot dial ssh itself: leave it to DOCKER_HOST.
		return ""
	}
	return h
}
