package uvmfentry

import "errors"

// Errors of Open, each wrapped with its details; test with errors.Is.
var (
	// ErrModuleNotLoaded: /sys/module/nvidia_uvm does not exist.
	ErrModuleNotLoaded = errors.New("uvmfentry: the nvidia_uvm kernel module is not loaded")
	// ErrNoModuleBTF: the module is loaded but the kernel has no BTF for
	// it (a kernel without CONFIG_DEBUG_INFO_BTF_MODULES, or a module
	// built without BTF), so nothing can be relocated or attached.
	ErrNoModuleBTF = errors.New("uvmfentry: the kernel has no BTF for nvidia_uvm")
	// ErrFunctionMissing: a function the backend cannot do without is not
	// in the module's BTF, has another prototype, or has no symbol of its
	// own (inlined, or renamed .isra/.constprop by the compiler) in this
	// driver.
	ErrFunctionMissing = errors.New("uvmfentry: a required nvidia_uvm function cannot be traced in this driver")
	// ErrKernelRefused: the kernel refused to load or attach the programs
	// (EPERM under kernel lockdown, missing CAP_BPF/CAP_PERFMON, a
	// verifier rejection).
	ErrKernelRefused = errors.New("uvmfentry: the kernel refused the UVM programs")
	// ErrUnsupported: not Linux.
	ErrUnsupported = errors.New("uvmfentry: fentry tracing of nvidia_uvm exists on Linux only")
)
