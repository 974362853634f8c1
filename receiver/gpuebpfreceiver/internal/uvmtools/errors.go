package uvmtools

import "errors"

// Errors of Open, each wrapped with the details; test with errors.Is.
var (
	// ErrNoDevice: /dev/nvidia-uvm-tools is missing or cannot be opened as a
	// device: no NVIDIA driver, nvidia-uvm not loaded, or the device node
	// not mounted into this container.
	ErrNoDevice = errors.New("uvmtools: no UVM tools device")
	// ErrNoProcess: the process does not exist (or exited).
	ErrNoProcess = errors.New("uvmtools: no such process")
	// ErrNotCUDA: the process has no initialized /dev/nvidia-uvm open (yet):
	// not a CUDA process, or one that has not created a context. Retry
	// later.
	ErrNotCUDA = errors.New("uvmtools: process has no UVM VA space")
	// ErrPermission: reading the process's fds, duplicating one
	// (pidfd_getfd needs CAP_SYS_PTRACE, or ptrace rights over the
	// process), or opening the device was refused.
	ErrPermission = errors.New("uvmtools: permission denied")
	// ErrUnsupported: the driver or kernel lacks an interface this package
	// needs (pidfd_getfd, the tools ioctls of drivers 565+).
	ErrUnsupported = errors.New("uvmtools: not supported by this driver or kernel")
	// ErrClosed: the Tracker was closed.
	ErrClosed = errors.New("uvmtools: tracker closed")
)
