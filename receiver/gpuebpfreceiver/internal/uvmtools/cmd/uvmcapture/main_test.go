//go:build linux

package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProgramJSON(t *testing.T) {
	out := "managed: starting\n{\"program\":\"managed\",\"bytes\":4096}\ntrailing words\n{not json\n"
	assert.JSONEq(t, `{"program":"managed","bytes":4096}`, string(programJSON(out)))
	assert.Nil(t, programJSON("no json at all\n"))
}

func TestRunProgramWithoutUVM(t *testing.T) {
	dir := t.TempDir()
	c := config{out: dir, name: "x", waitFile: filepath.Join(dir, "go"), queue: 16, proc: "/proc",
		attachTimeout: 5 * time.Second, poll: time.Millisecond, argv: []string{"sh", "-c", "exit 0"}}
	code, err := run(c)
	require.Error(t, err)
	assert.Equal(t, 1, code)
	assert.Contains(t, err.Error(), "exited before a tracker could attach")

	c.argv, c.attachTimeout = []string{"sleep", "5"}, 50*time.Millisecond
	start := time.Now()
	_, err = run(c)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no UVM VA space after 50ms")
	assert.Less(t, time.Since(start), 3*time.Second, "the program is killed, not waited for")
}
