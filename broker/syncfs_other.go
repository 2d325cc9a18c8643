//go:build !linux

package broker

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncfs flushes every file system: only Linux can flush one (syncfs(2)).
func syncfs(*os.File) error {
	unix.Sync()
	return nil
}
