package launch

import (
	"regexp"
	"strings"

	"github.com/distribution/reference"
)

// Identity is what makes a server the server it is, whatever its version:
// the kind, then the npm package name as published, the PyPI name normalised
// (PEP 503), or the image repository normalised with its registry ("notes"
// is docker.io/library/notes) and without tag or digest (an image ID as it
// is). Two launches with different identities are different publishers'
// code: under one server name that is drift (pin), and they never share a
// private HOME.
func Identity(kind, pkg, img string) string {
	switch kind {
	case "uvx":
		pkg = pep503.ReplaceAllString(strings.ToLower(pkg), "-")
	case "image":
		pkg = ImageRepository(img)
	}
	return kind + ":" + pkg
}

// Identity is the identity of l (see the function Identity); a remote
// server's is its URL.
func (l Launch) Identity() string {
	if l.Kind == "remote" {
		return Identity(l.Kind, l.URL, "")
	}
	return Identity(l.Kind, l.Package, l.Image)
}

// ImageRepository is an image reference without tag or digest, normalised
// (docker.io/library/notes for "notes"); an image ID stays as it is.
func ImageRepository(img string) string {
	if strings.HasPrefix(img, "sha256:") {
		return img
	}
	// The digest is the version, like the tag.
	repo, _, _ := strings.Cut(img, "@")
	if r, err := reference.ParseNormalizedNamed(repo); err == nil {
		return reference.TrimNamed(r).String()
	}
	return repo
}

var pep503 = regexp.MustCompile(`[-_.]+`)
