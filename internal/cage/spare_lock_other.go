//go:build !unix

package cage

import "errors"

// lockSpare: no spares where there is no flock.
func lockSpare(string) (func(), error) {
	return nil, errors.New("no egress spares on this system")
}

func tryLock(string) (func(), bool, error) {
	return nil, false, errors.New("no egress spares on this system")
}
