package clients

import (
	"os"

	"golang.org/x/sys/unix"
)

// specialFS names the kernel file system f lives on when it is one whose
// files are not data (procfs, sysfs, devtmpfs and the like), else "".
func specialFS(f *os.File) string {
	var st unix.Statfs_t
	if unix.Fstatfs(int(f.Fd()), &st) != nil {
		return ""
	}
	switch int64(st.Type) {
	case unix.PROC_SUPER_MAGIC:
		return "procfs"
	case unix.SYSFS_MAGIC:
		return "sysfs"
	case unix.DEBUGFS_MAGIC, unix.TRACEFS_MAGIC:
		return "debugfs"
	case unix.SECURITYFS_MAGIC:
		return "securityfs"
	case unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC:
		return "cgroupfs"
	case unix.DEVPTS_SUPER_MAGIC:
		return "devpts"
	case unix.BPF_FS_MAGIC:
		return "bpffs"
	}
	return ""
}
