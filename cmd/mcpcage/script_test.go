package main

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mcpcage/mcpcage/internal/cage"
)

// scriptCommands are the programs testscript scripts can exec besides mcpcage
// itself. The test files' script* functions, called from TestMain, add them.
var scriptCommands = map[string]func(){}

func TestMain(m *testing.M) {
	// Test programs live in temporary folders, which protect --fix refuses
	// to write into configs unless told (protect_temp_exe.txtar unsets it).
	if _, ok := os.LookupEnv("MCPCAGE_ALLOW_TEMP_EXE"); !ok {
		os.Setenv("MCPCAGE_ALLOW_TEMP_EXE", "1")
	}
	for _, add := range []func(){scriptAudit, scriptDockerErrors, scriptAudit2, scriptBare, scriptCage, scriptCage2, scriptPinCage, scriptProtect} {
		add()
	}
	cmds := map[string]func(){"mcpcage": func() { os.Exit(Main()) }}
	for k, v := range scriptCommands {
		cmds[k] = v
	}
	testscript.Main(m, cmds)
}

// TestScripts runs testdata/script/*.txtar: the command line as a user sees it.
// Each script gets its own $MCPCAGE_HOME and $HOME under its work directory.
func TestScripts(t *testing.T) {
	// $FIXTURE_IMAGE: the tag of this checkout's fixture server image, which
	// mkfixtureimage imports when the engine does not have it yet.
	fixture := sync.OnceValues(func() (string, error) {
		tag, _, err := fixtureImage(context.Background())
		return tag, err
	})
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// urlfrom VAR FILE: waits (10 s at most) for FILE, written by a
			// server started in the background, and sets VAR to what it holds.
			"urlfrom": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 || neg {
					ts.Fatalf("usage: urlfrom VAR FILE")
				}
				for range 200 {
					if b, err := os.ReadFile(ts.MkAbs(args[1])); err == nil && len(b) > 0 {
						ts.Setenv(args[0], string(b))
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				ts.Fatalf("%s was not written in 10 s", args[1])
			},
		},
		Setup: func(env *testscript.Env) error {
			tag, err := fixture()
			if err != nil {
				return err
			}
			env.Setenv("FIXTURE_IMAGE", tag)
			env.Setenv("MCPCAGE_HOME", env.WorkDir+"/.mcpcage")
			env.Setenv("HOME", env.WorkDir+"/home")
			env.Setenv("NO_COLOR", "1")
			bin, err := staticMcpcage()
			if err != nil {
				return err
			}
			env.Setenv(cage.EnvGatewayBinary, bin)
			// The test's mcpcage lives in a temporary folder, which protect
			// --fix refuses to write into configs unless told.
			env.Setenv("MCPCAGE_ALLOW_TEMP_EXE", "1")
			for _, k := range []string{"DOCKER_HOST", "MCPCAGE_IMAGE_NODE", "MCPCAGE_IMAGE_PYTHON", "PATH", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY",
				// The registry as the install phase reaches it (a CA bundle, a mirror).
				"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "PIP_CERT", "NPM_CONFIG_REGISTRY", "npm_config_registry"} {
				if v, ok := os.LookupEnv(k); ok {
					env.Setenv(k, v)
				}
			}
			return os.MkdirAll(env.WorkDir+"/home", 0o755)
		},
	})
}
