//go:build linux

package mcp

import "golang.org/x/sys/unix"

// childExited reports whether the child process pid has exited, without
// reaping it: an exited child not yet reaped, or one reaped already (then
// no longer a child of ours).
func childExited(pid int) bool {
	var info unix.Siginfo // zeroed: Linux leaves it so when no child is waitable
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if err == unix.ECHILD {
		return true
	}
	return err == nil && info.Signo == int32(unix.SIGCHLD)
}
