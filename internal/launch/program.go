package launch

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Program is a server installed as a local executable (github-mcp-server,
// a `go install`ed binary): it runs in the cage's base image with the binary
// mounted read-only at its own path.
type Program struct {
	Path   string // absolute, symlinks resolved: what is mounted and run
	Digest string // sha256:<hex> of the binary, so that an update shows in pins and audit
	Static bool   // no dynamic loader; else linked against glibc
}

// interpreters run a script given as their argument: the script, the
// interpreter's libraries and its packages are the user's files, which the
// cage does not have.
var interpreters = map[string]bool{
	"python": true, "python3": true, "python2": true, "py": true, "node": true, "nodejs": true, "bun": true,
	"deno": true, "ruby": true, "perl": true, "php": true, "java": true, "dotnet": true, "sh": true,
	"bash": true, "zsh": true, "fish": true, "pwsh": true, "powershell": true, "cmd": true, "tsx": true,
	"ts-node": true, "go": true, "cargo": true, "uv": true, "pipx": true, "poetry": true, "conda": true,
}

// IsInterpreter reports whether a command is a script interpreter or a
// toolchain (`python server.py`, `node index.js`, `go run .`).
func IsInterpreter(command string) bool {
	b := strings.ToLower(filepath.Base(strings.ReplaceAll(command, `\`, "/")))
	for _, ext := range []string{".exe", ".cmd", ".bat", ".ps1"} {
		b = strings.TrimSuffix(b, ext)
	}
	// python3.12, node22
	b = strings.TrimRight(b, "0123456789.")
	return interpreters[b]
}

// glibcLoaders are the dynamic loaders of glibc, which the base image has.
var glibcLoaders = map[string]bool{
	"/lib64/ld-linux-x86-64.so.2":     true,
	"/lib/ld-linux-aarch64.so.1":      true,
	"/lib/ld-linux-armhf.so.3":        true,
	"/lib64/ld64.so.2":                true,
	"/lib/ld64.so.1":                  true,
	"/lib/ld-linux.so.2":              true,
	"/lib/x86_64-linux-gnu/ld.so":     true,
	"/usr/lib64/ld-linux-x86-64.so.2": true,
}

var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM}

// FindProgram checks that command names a local executable the cage can run
// and returns it. A bare name is looked up in PATH, as the client would; "~/"
// is home and "./" is dir. Refused, with the reason: scripts and interpreters, programs for
// another architecture or another C library (musl), anything not an ELF
// executable.
func FindProgram(command, home, dir string) (Program, error) {
	if IsInterpreter(command) {
		return Program{}, fmt.Errorf("%q runs a script with your interpreter, libraries and files, which the cage does not have: mcpcage cages packages (npx, uvx), images (--image) and compiled programs", command)
	}
	p := command
	if x, ok := ExpandPath(p, home, dir); ok {
		p = x
	}
	if !strings.ContainsRune(p, '/') {
		lp, err := exec.LookPath(p)
		if err != nil {
			return Program{}, fmt.Errorf("%q is not a program on PATH", command)
		}
		p = lp
	}
	if !filepath.IsAbs(p) {
		return Program{}, fmt.Errorf("%q: give the program's absolute path (a client may start mcpcage in any directory)", command)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return Program{}, fmt.Errorf("%s: %v", command, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return Program{}, fmt.Errorf("%s: %v", command, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return Program{}, fmt.Errorf("%s is not an executable file", command)
	}
	f, err := os.Open(real)
	if err != nil {
		return Program{}, fmt.Errorf("%s: %v", command, err)
	}
	defer f.Close()
	head := make([]byte, 128)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if bytes.HasPrefix(head, []byte("#!")) {
		line, _, _ := bytes.Cut(head[2:], []byte("\n"))
		return Program{}, fmt.Errorf("%s is a script (#!%s): its interpreter and files are yours, not the cage's", command, strings.TrimSpace(string(line)))
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return Program{}, fmt.Errorf("%s is not a Linux program (ELF)", command)
	}
	if want, ok := elfMachine[runtime.GOARCH]; ok && ef.Machine != want {
		return Program{}, fmt.Errorf("%s is built for %s, not for this machine", command, ef.Machine)
	}
	if ef.Type != elf.ET_EXEC && ef.Type != elf.ET_DYN {
		return Program{}, fmt.Errorf("%s is not an executable", command)
	}
	prog := Program{Path: real, Static: true}
	for _, ph := range ef.Progs {
		if ph.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(ph.Open())
		if err != nil {
			return Program{}, fmt.Errorf("%s: %v", command, err)
		}
		interp := string(bytes.TrimRight(b, "\x00"))
		if !glibcLoaders[interp] {
			return Program{}, fmt.Errorf("%s needs the dynamic loader %s, which the cage's base image (Debian, glibc) does not have", command, interp)
		}
		prog.Static = false
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Program{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Program{}, fmt.Errorf("%s: %v", command, err)
	}
	prog.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return prog, nil
}
