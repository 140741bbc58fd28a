//go:build !linux

package cage

import (
	"errors"
	"os"
)

var errNoStdioPipes = errors.New("the cage's stdio pipes need Linux")

func mkfifo(string) error                           { return errNoStdioPipes }
func openNonblock(string, bool) (*os.File, error)   { return nil, errNoStdioPipes }
func widenPipe(*os.File)                            {}
func sharesPipes() bool                             { return false }
func LaunchOnPipes(dir string, argv []string) error { return errNoStdioPipes }
