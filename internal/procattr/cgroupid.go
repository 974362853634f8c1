package procattr

import (
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// CgroupIndex maps cgroup v2 ids (what bpf_get_current_cgroup_id returns:
// the inode number of the cgroup's directory) to cgroup paths, by walking the
// cgroup2 mount. It lets the collector attribute a process that exited
// before its /proc entry could be read.
type CgroupIndex struct {
	root     string
	minWalk  time.Duration
	maxPaths int

	mu       sync.Mutex
	byID     map[uint64]string
	lastWalk time.Time
}

// NewCgroupIndex indexes the cgroup2 hierarchy mounted at root
// (/sys/fs/cgroup). Walks happen on a miss, at most once per minWalk.
func NewCgroupIndex(root string, minWalk time.Duration) *CgroupIndex {
	return &CgroupIndex{root: root, minWalk: minWalk, maxPaths: 1 << 16, byID: map[uint64]string{}}
}

// Path returns the cgroup path ("/kubepods.slice/...") of cgroup id.
func (c *CgroupIndex) Path(id uint64) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.byID[id]; ok {
		return p, true
	}
	if time.Since(c.lastWalk) < c.minWalk {
		return "", false
	}
	c.walk()
	p, ok := c.byID[id]
	return p, ok
}

func (c *CgroupIndex) walk() {
	c.lastWalk = time.Now()
	byID := make(map[uint64]string, len(c.byID))
	_ = filepath.WalkDir(c.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if len(byID) >= c.maxPaths {
			return filepath.SkipAll
		}
		var st syscall.Stat_t
		if syscall.Stat(path, &st) != nil {
			return nil
		}
		rel, _ := filepath.Rel(c.root, path)
		byID[st.Ino] = filepath.Clean("/" + rel)
		return nil
	})
	c.byID = byID
}

// Attribute returns the container and pod of cgroup id, parsed as
// ParseCgroup does.
func (c *CgroupIndex) Attribute(id uint64) (Cgroup, bool) {
	p, ok := c.Path(id)
	if !ok {
		return Cgroup{}, false
	}
	cg, err := ParseCgroup([]byte("0::" + p + "\n"))
	return cg, err == nil
}
