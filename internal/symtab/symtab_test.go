package symtab

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSymbolizeProcess builds a small C program (go test binaries carry no
// symbol table), runs it and names addresses inside it.
func TestSymbolizeProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("map_files needs root")
	}
	bin := filepath.Join(t.TempDir(), "stub")
	out, err := exec.Command("gcc", "-O1", "-fPIE", "-pie", "-o", bin, "testdata/stub.c").CombinedOutput()
	require.NoError(t, err, string(out))

	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	var stub, helper uint64
	_, err = fmt.Sscanf(mustLine(t, stdout), "%v %v", &stub, &helper)
	require.NoError(t, err)

	s := New("/proc", 4)
	pid := uint32(cmd.Process.Pid)
	tests := []struct {
		addr uint64
		want string
		ok   bool
	}{
		{stub, "_Z11saxpyKernelfPKfPf", true},
		{helper, "helper", true},
		{0x10, "", false},
	}
	for _, tt := range tests {
		name, ok := s.Symbolize(pid, tt.addr)
		require.Equal(t, tt.ok, ok, "addr %#x", tt.addr)
		require.Equal(t, tt.want, name)
	}
	require.Len(t, s.files, 1, "one table per file")

	_, ok := s.Symbolize(1<<30, stub)
	require.False(t, ok, "no such process")
}

func mustLine(t *testing.T, f interface{ Read([]byte) (int, error) }) string {
	sc := bufio.NewScanner(f)
	require.True(t, sc.Scan())
	return sc.Text()
}

// TestLookupResolvesInTheBackground: the first ask queues, a later ask
// returns the name; a miss is an answer too.
func TestLookupResolvesInTheBackground(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("map_files needs root")
	}
	bin := filepath.Join(t.TempDir(), "stub")
	out, err := exec.Command("gcc", "-O1", "-fPIE", "-pie", "-o", bin, "testdata/stub.c").CombinedOutput()
	require.NoError(t, err, string(out))
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	var stub, helper uint64
	_, err = fmt.Sscanf(mustLine(t, stdout), "%v %v", &stub, &helper)
	require.NoError(t, err)

	s := New("/proc", 4)
	s.Start()
	defer s.Close()
	pid := uint32(cmd.Process.Pid)
	ask := func(addr uint64) string {
		var name string
		require.Eventually(t, func() bool {
			var done bool
			name, done = s.Lookup(pid, addr)
			return done
		}, 5*time.Second, time.Millisecond)
		return name
	}
	_, done := s.Lookup(pid, stub)
	require.False(t, done, "not resolved on the caller's goroutine")
	require.Equal(t, "_Z11saxpyKernelfPKfPf", ask(stub))
	require.Equal(t, "", ask(0x10), "a miss is answered, not retried forever")
	require.Empty(t, s.results, "collected answers are not kept")
}
