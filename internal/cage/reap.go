package cage

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// Info describes one cage container.
type Info struct {
	Name      string    `json:"name"`      // server name
	Container string    `json:"container"` // container name
	ID        string    `json:"id"`        // container id
	Image     string    `json:"image"`
	State     string    `json:"state"` // Docker's: running, exited, created...
	Created   time.Time `json:"created"`
	Session   string    `json:"session"`
	OwnerPID  int       `json:"owner_pid"`
	Owner     string    `json:"owner"` // alive, gone (an orphan) or unknown (another machine or pid namespace)
}

// List returns every cage container the engine has, newest first.
func List(ctx context.Context, cli *client.Client) ([]Info, error) {
	return list(ctx, cli, LabelCage+"=1")
}

func list(ctx context.Context, cli *client.Client, label string) ([]Info, error) {
	cs, err := cli.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", label)),
	})
	if err != nil {
		if isConnErr(err) {
			return nil, newDockerError(err)
		}
		return nil, fmt.Errorf("cannot list containers: %s", oneLine(err))
	}
	out := make([]Info, 0, len(cs))
	for _, c := range cs {
		o := ownerFromLabels(c.Labels)
		name := ""
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		img := c.Labels[LabelImage]
		if img == "" {
			img = c.Image
		}
		out = append(out, Info{
			Name:      c.Labels[LabelName],
			Container: name,
			ID:        c.ID,
			Image:     img,
			State:     string(c.State),
			Created:   time.Unix(c.Created, 0).UTC(),
			Session:   c.Labels[LabelSession],
			OwnerPID:  o.PID,
			Owner:     o.State().String(),
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

// Reap removes cage containers whose owner process is gone (orphans left by
// a killed mcpcage: killing a Docker client does not stop its container) and
// returns their names. Cages of live owners, and of other machines, stay.
// Any container with the owner labels counts (install containers too).
func Reap(ctx context.Context, cli *client.Client) ([]string, error) {
	cs, err := list(ctx, cli, LabelOwnerPID)
	if err != nil {
		return nil, err
	}
	var removed []string
	var firstErr error
	for _, c := range cs {
		if c.Owner != OwnerGone.String() {
			continue
		}
		err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			if firstErr == nil {
				firstErr = fmt.Errorf("cannot remove orphaned cage %s: %s", c.Container, oneLine(err))
			}
			continue
		}
		removed = append(removed, c.Container)
	}
	return removed, firstErr
}
