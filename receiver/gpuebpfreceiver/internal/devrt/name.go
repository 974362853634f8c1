package devrt

import (
	"strconv"
	"strings"
)

// Ring files are named gpuext-devrt-<pid>-<n>.ring, pid being devrt's
// getpid() (the pid in the process's own namespace).
const (
	namePrefix = "gpuext-devrt-"
	nameSuffix = ".ring"
)

// parseName returns the pid in a ring file's name, or false when name is
// not a ring file's.
func parseName(name string) (uint32, bool) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, nameSuffix)
	if !ok {
		return 0, false
	}
	pidStr, n, ok := strings.Cut(rest, "-")
	if !ok || !digits(n) || !digits(pidStr) {
		return 0, false
	}
	pid, err := strconv.ParseUint(pidStr, 10, 32)
	if err != nil || pid == 0 {
		return 0, false
	}
	return uint32(pid), true
}

func digits(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
