package broker

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncfs flushes the file system that holds d (syncfs(2)).
func syncfs(d *os.File) error { return unix.Syncfs(int(d.Fd())) }
