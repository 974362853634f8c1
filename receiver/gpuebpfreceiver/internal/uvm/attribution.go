package uvm

import (
	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
)

// Process is what a resource says about a traced process.
// Fields that could not be found are empty.
type Process struct {
	PID            uint32
	ExecutableName string
	ContainerID    string
	PodUID         string
}

// Attributor describes the process behind a pid the source tracks. It
// must be safe for concurrent use. It is called once per process, outside
// the source's lock (at Track, or at the first Scrape after Consume first
// saw the pid). A pid it cannot describe still gets
// a Process with the PID set.
type Attributor interface {
	Attribute(pid uint32) Process
}

// AttributorFunc adapts a function to Attributor.
type AttributorFunc func(pid uint32) Process

// Attribute calls f.
func (f AttributorFunc) Attribute(pid uint32) Process { return f(pid) }

// ProcessResolver is what procattr.Resolver offers.
type ProcessResolver interface {
	Resolve(pid int) (procattr.Process, error)
}

// ResolverAttributor attributes pids with a procattr.Resolver (or anything
// with its Resolve method). The pids are those given to Track, so the
// resolver must read the same /proc (proc_root).
func ResolverAttributor(r ProcessResolver) Attributor {
	return AttributorFunc(func(pid uint32) Process {
		p := Process{PID: pid}
		if r == nil || pid == 0 {
			return p
		}
		info, err := r.Resolve(int(pid))
		if err != nil {
			return p
		}
		p.ExecutableName = info.ExeName
		p.ContainerID = info.Cgroup.ContainerID
		p.PodUID = info.Cgroup.PodUID
		return p
	})
}

// pidOnly is the Attributor used when none is given.
var pidOnly = AttributorFunc(func(pid uint32) Process { return Process{PID: pid} })
