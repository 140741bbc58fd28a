package cage

// ExitReason tells the proxy, for the error it sends to a client left
// waiting, when the kernel ended the server for its memory limit: status
// 137 alone reads like any kill.
func (c *Cage) ExitReason() string {
	if c.OOMKilled() {
		return "killed for using more than its memory limit (raise it with --memory)"
	}
	return ""
}
