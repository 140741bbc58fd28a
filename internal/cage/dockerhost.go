package cage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// findDockerHost finds the engine when DOCKER_HOST is unset and the default
// socket is not there: the Docker CLI's current context (how Docker Desktop,
// Colima and rootless Docker are usually reached), then the sockets those
// put in well-known places. "" means the client's default.
func findDockerHost() string {
	if runtime.GOOS == "windows" {
		return ""
	}
	if _, err := os.Stat("/var/run/docker.sock"); err == nil {
		return ""
	}
	home, _ := os.UserHomeDir()
	if h := contextHost(dockerConfigDir(home)); h != "" {
		return h
	}
	var cands []string
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		cands = append(cands, filepath.Join(d, "docker.sock"))
	}
	if home != "" {
		cands = append(cands,
			filepath.Join(home, ".docker", "run", "docker.sock"),
			filepath.Join(home, ".colima", "default", "docker.sock"),
			filepath.Join(home, ".orbstack", "run", "docker.sock"),
			filepath.Join(home, ".rd", "docker.sock"))
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && st.Mode()&os.ModeSocket != 0 {
			return "unix://" + c
		}
	}
	return ""
}

// DockerSocketDirs returns the folders holding a Docker (or containerd)
// socket on this machine, symlinks resolved: the one DOCKER_HOST names, the
// default, and the well-known places findDockerHost looks. A mounted folder
// must never show one (see MasksFor and ResolveMount): the socket is root on
// the host.
func DockerSocketDirs() []string {
	var cands []string
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		cands = append(cands, strings.TrimPrefix(h, "unix://"))
	}
	cands = append(cands, "/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock")
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		cands = append(cands, filepath.Join(d, "docker.sock"))
	}
	home, _ := os.UserHomeDir()
	if home != "" {
		cands = append(cands,
			filepath.Join(home, ".docker", "run", "docker.sock"),
			filepath.Join(home, ".colima", "default", "docker.sock"),
			filepath.Join(home, ".orbstack", "run", "docker.sock"),
			filepath.Join(home, ".rd", "docker.sock"))
	}
	if h := contextHost(dockerConfigDir(home)); strings.HasPrefix(h, "unix://") {
		cands = append(cands, strings.TrimPrefix(h, "unix://"))
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range cands {
		r, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		d := filepath.Dir(r)
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
