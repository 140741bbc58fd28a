package cage

import "testing"

// How a missing cage image is got: an image the user named is never fetched
// in its place unless it is a tag of mcpcage's own, which is built.
func TestFirstUse(t *testing.T) {
	for _, c := range []struct {
		cands       []string
		env         string
		pull, build string
		refused     bool
	}{
		{[]string{"node:22-bookworm-slim", "mcpcage/node:22"}, "", "node:22-bookworm-slim", "mcpcage/node:22", false},
		{[]string{"mcpcage/node:23"}, "MCPCAGE_IMAGE_NODE", "", "mcpcage/node:23", false},
		{[]string{"ghcr.io/example/node:1"}, "MCPCAGE_IMAGE_NODE", "", "", true},
		{[]string{"node:22-bookworm-slim"}, "MCPCAGE_IMAGE_NODE", "", "", true},
		{[]string{"docker.io/mcpcage/node:22"}, "MCPCAGE_IMAGE_NODE", "", "", true},
	} {
		pull, build, refused := firstUse(c.cands, c.env)
		if pull != c.pull || build != c.build || refused != c.refused {
			t.Errorf("firstUse(%q, %q) = %q, %q, %v; want %q, %q, %v", c.cands, c.env, pull, build, refused, c.pull, c.build, c.refused)
		}
	}
}
