package procattr

import (
	"strings"
	"testing"
)

// FuzzParseCgroup checks that ParseCgroup never panics and that whatever it
// returns is a well-formed attribute: ids are either empty or in the one form
// the collector exports. Seeds: testdata/fuzz/FuzzParseCgroup and the table
// of TestParseCgroup.
func FuzzParseCgroup(f *testing.F) {
	for _, tt := range cgroupCases {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCgroup(data)
		if err != nil {
			if c != (Cgroup{}) {
				t.Fatalf("error %v with non-zero result %+v", err, c)
			}
			return
		}
		if !strings.HasPrefix(c.Path, "/") {
			t.Errorf("Path %q does not start with /", c.Path)
		}
		if c.ContainerID != "" && !isContainerID(c.ContainerID) {
			t.Errorf("ContainerID %q is not 64 lowercase hex digits", c.ContainerID)
		}
		if c.PodUID != "" && !isUUID(c.PodUID) {
			t.Errorf("PodUID %q is not a canonical UUID", c.PodUID)
		}
		switch c.Runtime {
		case "", RuntimeContainerd, RuntimeCRIO, RuntimeDocker, RuntimePodman:
		default:
			t.Errorf("unknown Runtime %q", c.Runtime)
		}
		if c.ContainerID == "" && c.Runtime != "" {
			t.Errorf("Runtime %q without a ContainerID", c.Runtime)
		}
		if c.ContainerID != "" && !strings.Contains(c.Path, c.ContainerID) {
			t.Errorf("ContainerID %q is not in Path %q", c.ContainerID, c.Path)
		}
	})
}
