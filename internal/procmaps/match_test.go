package procmaps

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLibraryMatcher(t *testing.T) {
	cuda := LibraryMatcher("libcuda.so*", "libcudart.so*")
	tests := []struct {
		path string
		want bool
	}{
		{"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14", true},
		{"/usr/lib64/libcuda.so.1", true},
		{"/usr/lib64/libcuda.so", true},
		{"/opt/conda/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12", true},
		{"/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05 (deleted)", true},
		{"libcuda.so.1", true}, // a bare name
		{"/usr/lib/x86_64-linux-gnu/libcudadebugger.so.1", false},
		{"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", false},
		{"/usr/lib/libcuda.so.1/", false}, // a directory, no base name
		{"/libcuda.so.1/other", false},
		{"[vdso]", false},
		{"", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, cuda(tt.path), "path %q", tt.path)
	}
}

func TestLibraryMatcherGlobs(t *testing.T) {
	tests := []struct {
		glob, base string
		want       bool
	}{
		{"libcuda.so.?", "libcuda.so.1", true},
		{"libcuda.so.?", "libcuda.so.12", false},
		{"libnvidia-[mn]l.so*", "libnvidia-ml.so.1", true},
		{"lib*.so.1", "libc.so.1", true},
		{"libc.so*", "libc.so.6", true},
		{"libc.so*", "libcuda.so.1", false},
		{"[", "[", false}, // malformed: never matches
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, LibraryMatcher(tt.glob)("/lib/"+tt.base), "glob %q, base %q", tt.glob, tt.base)
	}
	assert.False(t, LibraryMatcher()("/lib/libcuda.so.1"), "no globs match nothing")
}

func TestLibraryMatcherCopiesGlobs(t *testing.T) {
	globs := []string{"libcuda.so*"}
	match := LibraryMatcher(globs...)
	globs[0] = "other"
	assert.True(t, match("/lib/libcuda.so.1"))
}

func TestValidateGlobs(t *testing.T) {
	require.NoError(t, ValidateGlobs())
	require.NoError(t, ValidateGlobs("libcuda.so*", "libcudart.so.1[0-9]", `lib\*`))

	tests := []struct {
		globs []string
		want  string
	}{
		{[]string{"libcuda.so*", ""}, `library glob "" is empty`},
		{[]string{"/usr/lib/libcuda.so*"}, `library glob "/usr/lib/libcuda.so*" contains /: globs match base names only`},
		{[]string{"libcuda[.so"}, `library glob "libcuda[.so": syntax error in pattern`},
		{[]string{`libcuda\`}, `library glob "libcuda\\": syntax error in pattern`},
	}
	for _, tt := range tests {
		require.EqualError(t, ValidateGlobs(tt.globs...), tt.want)
	}
}
