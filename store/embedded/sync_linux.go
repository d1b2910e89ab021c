package embedded

import (
	"os"
	"syscall"
)

// datasync makes f's data durable, and of its metadata only what reading
// the data needs (fdatasync).
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
