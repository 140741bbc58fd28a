//go:build !amd64 || purego

package jsonrpc

// special: no vector search on this platform (see special_amd64.go).
func special(b []byte) (int, bool) { return 0, false }
