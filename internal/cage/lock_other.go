//go:build !unix

package cage

import "errors"

// tryLock: no flock here (and no egress gateway: its pipes need a Unix
// system).
func tryLock(string) (func(), bool, error) {
	return nil, false, errors.New("no file locks on this system")
}
