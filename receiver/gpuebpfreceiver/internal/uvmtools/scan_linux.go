//go:build linux

package uvmtools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// UVMDevicePath is what /proc/<pid>/fd/N reads for a process's UVM fd.
const UVMDevicePath = "/dev/nvidia-uvm"

// FindUVMFds returns, in ascending order, the fd numbers of process pid that
// refer to /dev/nvidia-uvm, read from procRoot/<pid>/fd (procRoot is /proc,
// or where the host's /proc is mounted). A CUDA process has two: its VA
// space, and a second one it hands to UVM_MM_INITIALIZE. It returns
// ErrNoProcess, ErrPermission, or ErrNotCUDA when there is none.
func FindUVMFds(procRoot string, pid int) ([]int, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("%w: pid %d", ErrNoProcess, pid)
	}
	dir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, classifyFsErr(err, pid, dir)
	}
	var fds []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 0 {
			continue
		}
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return nil, fmt.Errorf("%w: readlink %s: %v", ErrPermission, filepath.Join(dir, e.Name()), err)
			}
			continue // closed meanwhile
		}
		if target == UVMDevicePath {
			fds = append(fds, n)
		}
	}
	if len(fds) == 0 {
		return nil, fmt.Errorf("%w: pid %d has no %s open", ErrNotCUDA, pid, UVMDevicePath)
	}
	sort.Ints(fds)
	return fds, nil
}

func classifyFsErr(err error, pid int, path string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: pid %d (%s)", ErrNoProcess, pid, path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %s: %v", ErrPermission, path, err)
	}
	return fmt.Errorf("uvmtools: pid %d: %w", pid, err)
}
