package cage

import (
	"os"
	"path/filepath"
	"slices"
)

// SocketDirs returns the folders of this machine that hold the Unix sockets
// of the user's daemons: the runtime folders (/run/user/UID,
// $XDG_RUNTIME_DIR: D-Bus, gpg-agent, PulseAudio, Wayland, rootless Docker),
// tmux's (/tmp/tmux-UID, under $TMUX_TMPDIR too), X11's (/tmp/.X11-unix,
// /tmp/.ICE-unix), ssh-agent's (/tmp/ssh-*, the folder of $SSH_AUTH_SOCK),
// and ~/.ssh and ~/.gnupg (ControlMaster and older gpg-agent sockets, beside
// the keys). Only those that exist are returned, symlinks resolved.
//
// The seccomp profile already keeps the cage from connecting to any of them;
// these folders are, besides, never mounted because a server's argument
// names them, and are masked where a mounted folder holds them, unless a
// --mount names them itself.
func SocketDirs() []string {
	var cands []string
	globs := []string{"/run/user/*", "/var/run/user/*", "/tmp/tmux-*", "/tmp/.X11-unix", "/tmp/.ICE-unix", "/tmp/ssh-*"}
	if d := os.Getenv("TMUX_TMPDIR"); filepath.IsAbs(d) {
		globs = append(globs, filepath.Join(d, "tmux-*"))
	}
	for _, g := range globs {
		m, _ := filepath.Glob(g)
		cands = append(cands, m...)
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		cands = append(cands, d)
	}
	home, _ := os.UserHomeDir()
	if s := os.Getenv("SSH_AUTH_SOCK"); filepath.IsAbs(s) {
		// The agent's own folder, not a shared one it was put in.
		if d := filepath.Dir(filepath.Clean(s)); !slices.Contains([]string{"/", "/tmp", "/var/tmp", "/run", "/var/run", home}, d) {
			cands = append(cands, d)
		}
	}
	if home != "" {
		cands = append(cands, filepath.Join(home, ".ssh"), filepath.Join(home, ".gnupg"))
	}
	var out []string
	for _, c := range cands {
		r, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		if st, err := os.Stat(r); err != nil || !st.IsDir() {
			continue
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// SocketDirOf returns the folder of dirs that holds path (a host path,
// symlinks resolved), or "" when none does.
func SocketDirOf(path string, dirs []string) string {
	for _, d := range dirs {
		if within(path, d) {
			return d
		}
	}
	return ""
}
