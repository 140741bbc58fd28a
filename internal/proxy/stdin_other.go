//go:build !unix

package proxy

import "io"

func interruptible(in io.Reader) (io.Reader, func(), func()) { return in, func() {}, func() {} }
