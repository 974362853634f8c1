package procattr

// Identity is what a resource says about a process: the attributes the
// receiver's sources put on it. Fields that could not be found are empty.
type Identity struct {
	PID            uint32
	ExecutableName string
	ContainerID    string
	PodUID         string
}

// Attributor describes the process behind a pid a source reports. It must
// be safe for concurrent use. A pid it cannot describe still gets an
// Identity with the PID set.
type Attributor interface {
	Attribute(pid uint32) Identity
}

// AttributorFunc adapts a function to Attributor.
type AttributorFunc func(pid uint32) Identity

// Attribute calls f.
func (f AttributorFunc) Attribute(pid uint32) Identity { return f(pid) }

// ProcessResolver is what Resolver offers.
type ProcessResolver interface {
	Resolve(pid int) (Process, error)
}

// ResolverAttributor attributes pids with a Resolver (or anything with its
// Resolve method). The pids are the host's, so the resolver must read the
// host's /proc (proc_root).
func ResolverAttributor(r ProcessResolver) Attributor {
	return AttributorFunc(func(pid uint32) Identity {
		p := Identity{PID: pid}
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

// PIDOnly is the Attributor that knows nothing but the pid.
var PIDOnly = AttributorFunc(func(pid uint32) Identity { return Identity{PID: pid} })
