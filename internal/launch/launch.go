// Package launch owns a server's command line: how `npx PKG ARGS`, `uvx PKG
// ARGS` or an image is read and checked (ParseCommand, ParseSpec), the
// server's default name (DeriveName), which arguments name host folders
// (ArgPaths), and the record of how a caged server was started (Launch), the
// facts that pins and audit records carry so that a changed launch can be
// seen later. It imports no container engine: client configurations are
// read and rewritten with it alone.
package launch

// Launch is the identity of what runs inside a cage.
type Launch struct {
	Kind        string   `json:"kind"`                   // "npx", "uvx", "image", "exec", "remote" or "process" (tests)
	Package     string   `json:"package,omitempty"`      // npm or PyPI package name, without version
	Version     string   `json:"version,omitempty"`      // resolved version that is installed and run
	Image       string   `json:"image,omitempty"`        // image reference the cage ran
	ImageDigest string   `json:"image_digest,omitempty"` // image ID (sha256:...) of that image
	Argv        []string `json:"argv,omitempty"`         // the server's own arguments
	// URL is a remote server's address as the user wrote it (RemoteURL):
	// ${VAR} references stand for what they hold.
	URL string `json:"url,omitempty"`
}
