//go:build !unix

package egress

import (
	"errors"
	"io"
)

var errNoPipes = errors.New("the egress gateway's pipes need a Unix system")

// MakePipes is not possible here: the cage and its gateway run on a Linux
// engine, and mcpcage makes their pipes on the engine's file system.
func MakePipes(dir string) error { return errNoPipes }

// MakeFIFO is not possible here either (see MakePipes).
func MakeFIFO(p string) error { return errNoPipes }

// OpenGatewayPipes runs in the gateway container only (Linux).
func OpenGatewayPipes(dir string) (io.ReadWriteCloser, error) { return nil, errNoPipes }

// OpenShimPipes runs in the cage only (Linux).
func OpenShimPipes(dir string) (io.ReadWriteCloser, error) { return nil, errNoPipes }
