package procmaps

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// LibraryMatcher returns a match function for Scan that accepts a path when
// its base name matches one of globs, with path.Match semantics:
//
//	LibraryMatcher("libcuda.so*", "libcudart.so*")
//
// accepts "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14" and
// "/opt/conda/lib/libcudart.so.12". Matching the base name, not the path,
// is what finds a library wherever a distribution, a container image or a
// Python wheel put it. A trailing " (deleted)" is ignored.
//
// A malformed glob never matches; check configured globs with ValidateGlobs.
func LibraryMatcher(globs ...string) func(path string) bool {
	globs = slices.Clone(globs)
	return func(p string) bool {
		p = strings.TrimSuffix(p, deletedSuffix)
		base := p[strings.LastIndexByte(p, '/')+1:]
		if base == "" {
			return false
		}
		for _, g := range globs {
			if ok, _ := path.Match(g, base); ok {
				return true
			}
		}
		return false
	}
}

// ValidateGlobs returns an error naming the first glob that LibraryMatcher
// could never match with: a malformed pattern, an empty one, or one with a
// "/" in it (only base names are matched).
func ValidateGlobs(globs ...string) error {
	for _, g := range globs {
		switch {
		case g == "":
			return fmt.Errorf("library glob %q is empty", g)
		case strings.Contains(g, "/"):
			return fmt.Errorf("library glob %q contains /: globs match base names only", g)
		}
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("library glob %q: %w", g, err)
		}
	}
	return nil
}
