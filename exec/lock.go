package exec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// errDirLocked says another stream thread or instance holds a task's
// state directory; the task waits and tries again.
var errDirLocked = errors.New("state directory is locked by another stream thread or process")

// dirLock is an exclusive lock on a task's state directory (flock on a
// .lock file in it), so that two threads or processes never open the
// same stores. flock locks belong to the open file: two threads of one
// process exclude each other too.
type dirLock struct{ f *os.File }

func lockDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, errDirLocked)
		}
		return nil, err
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) unlock() {
	if l == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}
