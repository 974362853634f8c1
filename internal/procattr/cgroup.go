package procattr

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Container runtimes reported in Cgroup.Runtime. They are recognised by the
// prefix each runtime gives the cgroup it creates for a container.
const (
	RuntimeContainerd = "containerd"
	RuntimeCRIO       = "cri-o"
	RuntimeDocker     = "docker"
	RuntimePodman     = "podman"
)

// Cgroup is what a process's cgroup path says about where it runs.
type Cgroup struct {
	// Path is the cgroup path the ids were taken from, exactly as the
	// kernel printed it: relative to the cgroup namespace of the reader,
	// so a collector in a private cgroup namespace sees "/" for everything.
	Path string
	// ContainerID is the 64-character lowercase hex id of the innermost
	// container, or "" when the process is not in a recognised container.
	ContainerID string
	// PodUID is the Kubernetes pod UID in canonical dashed form, or "".
	PodUID string
	// Runtime is one of the Runtime* constants when the container's cgroup
	// name says which runtime made it, else "". It is always "" when
	// ContainerID is "".
	Runtime string
}

// scopePrefixes maps the prefix of a "<prefix>-<id>[.scope]" cgroup name to
// the runtime that creates it. Prefixes not listed here are deliberately not
// containers: "crio-conmon-<id>.scope" and "libpod-conmon-<id>.scope" hold
// the container monitor, which runs beside the container, not in it.
var scopePrefixes = map[string]string{
	"cri-containerd": RuntimeContainerd,
	"nerdctl":        RuntimeContainerd,
	"crio":           RuntimeCRIO,
	"docker":         RuntimeDocker,
	"libpod":         RuntimePodman,
}

// errNoEntries is returned for input without a single cgroup line.
var errNoEntries = errors.New("no cgroup entries")

// ParseCgroup parses the contents of /proc/<pid>/cgroup.
//
// Each line is "hierarchy-ID:controllers:path". On a cgroup v2 host there is
// one line, "0::<path>"; on a v1 or hybrid host there is one line per
// hierarchy and the ids may appear only on some of them (the v2 line of a
// hybrid host is often just "0::/"). So the v2 line is used when it carries
// an id, else the first line that carries one, else the v2 line, else the
// first line.
//
// A path with no container or pod (host processes, "/init.scope", "/") is
// not an error: it returns a Cgroup with empty ids. Input that is not a
// cgroup file at all is: an error names the first line that is wrong and
// why.
func ParseCgroup(data []byte) (Cgroup, error) {
	var (
		v2, withID, first Cgroup
		haveV2, haveID    bool
		lines             int
	)
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		if len(line) == 0 {
			continue
		}
		path, isV2, err := parseCgroupLine(line)
		if err != nil {
			return Cgroup{}, fmt.Errorf("cgroup line %d: %w", n, err)
		}
		c := parseCgroupPath(path)
		if lines == 0 {
			first = c
		}
		lines++
		if isV2 && !haveV2 {
			v2, haveV2 = c, true
		}
		if !haveID && c.hasID() {
			withID, haveID = c, true
		}
	}
	switch {
	case lines == 0:
		return Cgroup{}, errNoEntries
	case haveV2 && v2.hasID():
		return v2, nil
	case haveID:
		return withID, nil
	case haveV2:
		return v2, nil
	default:
		return first, nil
	}
}

func (c Cgroup) hasID() bool {
	return c.ContainerID != "" || c.PodUID != ""
}

// parseCgroupLine splits one line of /proc/<pid>/cgroup and reports whether
// it is the cgroup v2 (unified) line.
func parseCgroupLine(line []byte) (path string, isV2 bool, err error) {
	for _, b := range line {
		if b < 0x20 || b == 0x7f {
			return "", false, fmt.Errorf("control byte 0x%02x in %s: not a cgroup file", b, quote(line))
		}
	}
	id, rest, ok := bytes.Cut(line, []byte{':'})
	if !ok {
		return "", false, fmt.Errorf("want hierarchy-ID:controllers:path, got %s", quote(line))
	}
	controllers, p, ok := bytes.Cut(rest, []byte{':'})
	if !ok {
		return "", false, fmt.Errorf("want hierarchy-ID:controllers:path, got %s", quote(line))
	}
	if !isDecimal(id) {
		return "", false, fmt.Errorf("hierarchy ID %s is not a decimal number", quote(id))
	}
	if len(p) == 0 || p[0] != '/' {
		return "", false, fmt.Errorf("cgroup path %s does not start with /", quote(p))
	}
	return string(p), string(id) == "0" && len(controllers) == 0, nil
}

// parseCgroupPath finds the container and pod in a cgroup path. It walks the
// path from the root down so that the innermost container wins: a pod in
// kind runs in a cgroup below the node's own docker container.
func parseCgroupPath(path string) Cgroup {
	c := Cgroup{Path: path}
	var parent string
	underKubepods := false
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "" {
			continue
		}
		if strings.Contains(seg, "kubepods") {
			underKubepods = true
		}
		// A cgroup name in the systemd "slice:prefix:id" notation, which
		// containerd writes literally when it manages cgroups itself while
		// the kubelet names them for systemd:
		// "kubepods-besteffort-pod<uid>.slice:cri-containerd:<id>".
		name, scope := seg, ""
		if parts := strings.Split(seg, ":"); len(parts) == 3 {
			name, scope = parts[0], parts[1]+"-"+parts[2]
		}
		if uid, ok := podUID(name, underKubepods); ok {
			// A pod below a container starts a new nesting level (kind,
			// k8s in docker): the outer container is not the pod's.
			c.PodUID, c.ContainerID, c.Runtime = uid, "", ""
		}
		if scope == "" {
			scope = name
		}
		if id, runtime, ok := containerID(scope, parent); ok {
			c.ContainerID, c.Runtime = id, runtime
		}
		parent = seg
	}
	return c
}

// podUID recognises the pod level of a Kubernetes cgroup path:
//
//	systemd driver:  kubepods-burstable-pod0b6ecbb1_3f46_4e0a_9d1f_6e9b0c6a1a2b.slice
//	                 kubepods-pod0b6ecbb1_3f46_4e0a_9d1f_6e9b0c6a1a2b.slice (guaranteed)
//	cgroupfs driver: pod0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b (below a kubepods level)
//
// The systemd driver writes the UID with underscores because "-" separates
// the levels of a slice name.
func podUID(seg string, underKubepods bool) (string, bool) {
	if name, ok := strings.CutSuffix(seg, ".slice"); ok {
		i := strings.LastIndex(name, "-pod")
		if i < 0 || !strings.Contains(name[:i], "kubepods") {
			return "", false
		}
		uid := strings.ReplaceAll(name[i+len("-pod"):], "_", "-")
		return uid, isUUID(uid)
	}
	if uid, ok := strings.CutPrefix(seg, "pod"); ok && underKubepods && isUUID(uid) {
		return uid, true
	}
	return "", false
}

// containerID recognises the container level of a cgroup path:
//
//	<prefix>-<64hex>.scope  systemd driver (docker, containerd, cri-o, podman)
//	<prefix>-<64hex>        cgroupfs driver (cri-o, podman's libpod_parent)
//	<64hex>                 cgroupfs driver (docker v1 "/docker/<id>", containerd)
//
// A bare id is attributed to docker only when its parent is "docker";
// elsewhere the runtime is not written down and is reported as "".
func containerID(seg, parent string) (id, runtime string, ok bool) {
	name := strings.TrimSuffix(seg, ".scope")
	if isContainerID(name) {
		if parent == "docker" {
			return name, RuntimeDocker, true
		}
		return name, "", true
	}
	i := strings.LastIndexByte(name, '-')
	if i < 0 || !isContainerID(name[i+1:]) {
		return "", "", false
	}
	runtime, ok = scopePrefixes[name[:i]]
	if !ok {
		return "", "", false
	}
	return name[i+1:], runtime, true
}

// isContainerID reports whether s is a full container id: 64 lowercase hex
// digits, the form docker, containerd, cri-o and podman all use.
func isContainerID(s string) bool {
	return len(s) == 64 && isLowerHex(s)
}

// isUUID reports whether s is a UUID in canonical form:
// 8-4-4-4-12 lowercase hex digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isLowerHexDigit(s[i]) {
				return false
			}
		}
	}
	return true
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isLowerHexDigit(s[i]) {
			return false
		}
	}
	return true
}

func isLowerHexDigit(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f'
}

func isDecimal(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// quote formats untrusted input for an error message, shortened so that a
// garbage file cannot produce a huge error.
func quote(b []byte) string {
	const limit = 64
	if len(b) > limit {
		return fmt.Sprintf("%q...", b[:limit])
	}
	return fmt.Sprintf("%q", b)
}
