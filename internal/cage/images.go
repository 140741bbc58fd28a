package cage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/mcpcage/mcpcage/images"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/install"
	"github.com/mcpcage/mcpcage/internal/progress"
)

// ImageState is one candidate image of a package kind (install.Candidates).
type ImageState struct {
	Kind    string // npx or uvx
	Image   string
	Present bool   // on this machine
	Used    bool   // the one a server of Kind would run on now
	ID      string // when present
	Env     string // the variable that named it, "" for the default order
}

// ListImages reports, for npx and uvx servers, the images looked for in order.
func ListImages(ctx context.Context, cli client.APIClient) ([]ImageState, error) {
	var out []ImageState
	for _, kind := range []string{"npx", "uvx"} {
		cands, env := install.Candidates(kind)
		used := false
		for _, ref := range cands {
			s := ImageState{Kind: kind, Image: ref, Env: env}
			ins, err := cli.ImageInspect(ctx, ref)
			switch {
			case err == nil:
				s.Present, s.ID = true, ins.ID
				if !used {
					s.Used, used = true, true
				}
			case !cerrdefs.IsNotFound(err):
				return nil, fmt.Errorf("cannot inspect image %s: %v", ref, err)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// BuildArg is the argument of `mcpcage images build` for a package kind.
func BuildArg(kind string) string {
	if kind == "uvx" {
		return "python"
	}
	return "node"
}

// BuildImages builds the images o asks for, under the tags MCPCAGE_IMAGE_*
// name when set (so a test or a user's own tag never replaces the defaults).
func BuildImages(ctx context.Context, errOut io.Writer, o images.Options) error {
	cli, err := Connect(ctx)
	if err != nil {
		return &UpError{Err: err, Fix: ConnectHint(err)}
	}
	cli.Close()
	if os.Geteuid() != 0 {
		return &UpError{Err: errors.New("building the cage images needs root (debootstrap and chroot)"),
			Fix: "run `sudo mcpcage images build`, or load images built elsewhere (docs/images.md)"}
	}
	o.NodeTag = strings.TrimSpace(os.Getenv(install.EnvNodeImage))
	o.PythonTag = strings.TrimSpace(os.Getenv(install.EnvPythonImage))
	if o.Cache == "" {
		if o.Cache, err = home.Sub("cache", "images"); err != nil {
			return err
		}
	}
	o.Stderr = errOut
	return images.Build(ctx, o)
}

// firstUse decides how a missing image of a package kind is got: pull is the
// official image to pull ("" for none), build the tag to build when the pull
// fails or there is none ("" for none). An image the user named outside
// mcpcage/ is neither pulled nor built: refused says why.
func firstUse(cands []string, env string) (pull, build string, refused bool) {
	pull, build = cands[0], cands[len(cands)-1]
	if strings.HasPrefix(pull, "mcpcage/") {
		// A tag of mcpcage's own exists nowhere to pull: it is built.
		return "", build, false
	}
	if env != "" {
		return "", "", true
	}
	return pull, build, false
}

// obtainImage gets the image a package kind needs when none of cands is on
// this machine, saying what it does: pull the official image where a
// registry answers, else build the local one (see firstUse). A failure's
// cause goes to errOut whatever rep's mode; the rest is progress.
func obtainImage(ctx context.Context, cli client.APIClient, errOut io.Writer, rep *progress.Reporter, kind string, cands []string, pull, build string) error {
	what := "Node.js"
	if kind == "uvx" {
		what = "Python"
	}
	if rep.Mode() == progress.Plain {
		fmt.Fprintf(errOut, "mcpcage: no %s cage image on this machine (looked for %s)\n", what, strings.Join(cands, ", "))
	}
	if pull != "" {
		step := rep.Start("pulling "+pull, fmt.Sprintf("pulling %s (the official image) for %s servers", pull, kind))
		err := pullImage(ctx, cli, pull)
		if err == nil {
			step.Done("pulled %s", pull)
			return nil
		}
		step.Stop()
		fmt.Fprintf(errOut, "mcpcage: cannot pull %s (%v)\n", pull, err)
	}
	line := fmt.Sprintf("no %s cage image on this machine: building %s locally from Debian's archive and the npm registry (no container registry needed; a few minutes the first time)", what, build)
	o := images.Options{Node: kind != "uvx", Python: kind == "uvx", Progress: string(progress.Quiet)}
	if rep.Mode() == progress.Plain {
		// The recipe's own lines say each phase and tick.
		line = fmt.Sprintf("building %s locally from Debian's archive and the npm registry (no container registry needed; a few minutes the first time, progress below)", build)
		o.Progress = string(progress.Plain)
	}
	step := rep.Start("building "+build, line)
	// The tag that is missing is the one built; MCPCAGE_IMAGE_* set it.
	if err := BuildImages(ctx, errOut, o); err != nil {
		step.Stop()
		var ue *UpError
		if errors.As(err, &ue) {
			return ue.Err
		}
		return err
	}
	step.Done("%s is ready; starting the server", build)
	return nil
}

func pullImage(ctx context.Context, cli client.APIClient, ref string) error {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	rc, err := cli.ImagePull(pctx, ref, image.PullOptions{})
	if err != nil {
		return errors.New(firstLine(err.Error()))
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if m.Error != "" {
			return errors.New(firstLine(m.Error))
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimPrefix(s, "Error response from daemon: ")
}
