package gpuebpfreceiver

import (
	"path"
	"strings"

	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
)

// matches reports whether every field set in the rule matches the process.
func (r ProcessRule) matches(p procattr.Process) bool {
	if r.Executable != "" {
		if ok, _ := path.Match(r.Executable, p.ExeName); !ok {
			return false
		}
	}
	if r.ContainerID != "" && (p.Cgroup.ContainerID == "" || !strings.HasPrefix(p.Cgroup.ContainerID, r.ContainerID)) {
		return false
	}
	if r.PodUID != "" && p.Cgroup.PodUID != r.PodUID {
		return false
	}
	return true
}

// selector returns the process selection of the include/exclude rules, or
// nil when there are none (everything is traced, nothing to evaluate).
func (c *CUDAConfig) selector() func(procattr.Process) bool {
	if len(c.Include) == 0 && len(c.Exclude) == 0 {
		return nil
	}
	include, exclude := c.Include, c.Exclude
	return func(p procattr.Process) bool {
		for _, r := range exclude {
			if r.matches(p) {
				return false
			}
		}
		if len(include) == 0 {
			return true
		}
		for _, r := range include {
			if r.matches(p) {
				return true
			}
		}
		return false
	}
}
