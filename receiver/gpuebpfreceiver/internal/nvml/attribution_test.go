package nvml

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
)

type fakeResolver map[int]procattr.Process

func (f fakeResolver) Resolve(pid int) (procattr.Process, error) {
	if p, ok := f[pid]; ok {
		return p, nil
	}
	return procattr.Process{}, errors.New("no such process")
}

func TestResolverAttributor(t *testing.T) {
	a := ResolverAttributor(fakeResolver{
		42: {PID: 42, ExeName: "python3", Cgroup: procattr.Cgroup{
			ContainerID: "4e8d2bb4a7f3", PodUID: "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b"}},
	})
	if got, want := a.Attribute(42), (Process{PID: 42, ExecutableName: "python3", ContainerID: "4e8d2bb4a7f3",
		PodUID: "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b"}); got != want {
		t.Errorf("Attribute(42) = %+v", got)
	}
	if got := a.Attribute(43); got != (Process{PID: 43}) {
		t.Errorf("unknown pid: %+v", got)
	}
	if got := ResolverAttributor(nil).Attribute(7); got != (Process{PID: 7}) {
		t.Errorf("nil resolver: %+v", got)
	}
}

func TestResolverAttributorWithProcfs(t *testing.T) {
	r, err := procattr.NewResolver("/proc")
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
