package proxy

import "golang.org/x/sys/unix"

// hungUp reports whether the writing end of fd (a pipe, a socket, a
// terminal) has gone, even if data is still waiting in it.
func hungUp(fd uintptr) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0 && p[0].Revents&(unix.POLLHUP|unix.POLLRDHUP) != 0
}
