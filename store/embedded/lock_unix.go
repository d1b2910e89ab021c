//go:build unix

package embedded

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockData takes the lock file <data>.lock, exclusively, for as long as
// the returned file stays open: a second process on the same data refuses
// to start instead of overwriting the first one's files. The kernel lets
// go of the lock when the process ends, however it ends.
func lockData(data string) (*os.File, error) {
	p := data + ".lock"
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the lock file %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("the data file %s is in use: another process holds its lock %s (another orders on the same -data); stop it first, or give this one another -data", data, p)
		}
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	return f, nil
}
