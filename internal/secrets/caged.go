package secrets

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/mcpcage/mcpcage/internal/atomicfile"
)

// What a session needs to recognize the credentials of other caged servers
// in its tool calls: the names of the variables each server is given with
// --env, recorded in a directory of mcpcage's state, one file per server.
// Values are never written; a session reads them from its own environment
// when it starts.

var (
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	serverFile = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

// EnvRecords is the directory under mcpcage's state directory home where
// the --env names of each server are recorded.
func EnvRecords(home string) string { return filepath.Join(home, "env") }

type envRecord struct {
	Server string   `json:"server"`
	Env    []string `json:"env"`
}

// RecordEnv records in dir the names of the variables passed to server
// (its --env names, never their values), replacing what was recorded
// before. A server passed nothing has its record removed.
func RecordEnv(dir, server string, names []string) error {
	if !serverFile.MatchString(server) {
		return errors.New("server name " + server + " cannot name a file")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	path := filepath.Join(dir, server+".json")
	var keep []string
	for _, n := range names {
		if n, _, _ = strings.Cut(n, "="); envName.MatchString(n) {
			keep = append(keep, n)
		}
	}
	sort.Strings(keep)
	keep = dedup(keep)
	if len(keep) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if old, err := os.ReadFile(path); err == nil {
		var r envRecord
		if json.Unmarshal(old, &r) == nil && strings.Join(r.Env, "\n") == strings.Join(keep, "\n") {
			return nil // unchanged: no write on every session start
		}
	}
	b, err := json.Marshal(envRecord{Server: server, Env: keep})
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

func dedup(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// CagedCredentials returns the credentials mcpcage passes to the caged
// servers recorded in dir other than self: for each recorded name whose
// value getenv knows and Watched accepts, unless self is given the same
// value too (selfEnv: its own --env names). A record that cannot be read is
// skipped: what it would have added is a check, not a permission.
func CagedCredentials(dir, self string, selfEnv []string, getenv func(string) string) []Credential {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	own := map[string]bool{}
	for _, n := range selfEnv {
		n, _, _ = strings.Cut(n, "=")
		if v := getenv(n); v != "" {
			own[v] = true
		}
	}
	var out []Credential
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || name == self || !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || len(b) > 1<<20 {
			continue
		}
		var r envRecord
		if json.Unmarshal(b, &r) != nil {
			continue
		}
		for _, n := range r.Env {
			if v := getenv(n); envName.MatchString(n) && Watched(n, v) && !own[v] {
				out = append(out, Credential{Env: n, Server: name, Value: v})
			}
		}
	}
	return out
}
