package procattr

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

type mapResolver map[int]Process

func (f mapResolver) Resolve(pid int) (Process, error) {
	if p, ok := f[pid]; ok {
		return p, nil
	}
	return Process{}, errors.New("no such process")
}

// TestResolverAttributor: what the NVML and UVM sources put on process
// resources.
func TestResolverAttributor(t *testing.T) {
	a := ResolverAttributor(mapResolver{
		42: {PID: 42, ExeName: "python3", Cgroup: Cgroup{
			ContainerID: "4e8d2bb4a7f3", PodUID: "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b"}},
	})
	if got, want := a.Attribute(42), (Identity{PID: 42, ExecutableName: "python3", ContainerID: "4e8d2bb4a7f3",
		PodUID: "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b"}); got != want {
		t.Errorf("Attribute(42) = %+v", got)
	}
	if got := a.Attribute(43); got != (Identity{PID: 43}) {
		t.Errorf("unknown pid: %+v", got)
	}
	if got := ResolverAttributor(nil).Attribute(7); got != (Identity{PID: 7}) {
		t.Errorf("nil resolver: %+v", got)
	}
}

func TestResolverAttributorWithProcfs(t *testing.T) {
	r, err := NewResolver("/proc")
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	got := ResolverAttributor(r).Attribute(uint32(os.Getpid()))
	if got.PID != uint32(os.Getpid()) || got.ExecutableName != filepath.Base(exe) {
		t.Errorf("own process: %+v, want executable %s", got, filepath.Base(exe))
	}
}
