//go:build linux

// uvmcapture runs a program, attaches a UVM tools tracker to it as soon as it
// has a UVM VA space, records every event until it exits, and writes a
// fixture for package uvmtools (NAME.bin[.gz]: the raw queue entries;
// NAME.json: how they were captured, the processor table, the driver's
// counters, the program's own JSON report and the summary) and prints the
// summary.
//
//	uvmcapture --out DIR --name NAME --wait-file /tmp/go -- ./managed --start-file /tmp/go
//
// With --wait-file, the file is removed first and created once the tracker
// is attached: a program that waits for it has all its work traced. Needs
// root (CAP_SYS_PTRACE for pidfd_getfd) and /dev/nvidia-uvm-tools.
//
// It lives beside the package because Go forbids importing an internal
// package from bench/; bench/device/uvm.sh runs a prebuilt binary of it.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

func main() {
	var (
		outDir        = flag.String("out", ".", "directory for NAME.bin[.gz] and NAME.json")
		name          = flag.String("name", "capture", "fixture base name")
		waitFile      = flag.String("wait-file", "", "create this file once attached (the program waits for it)")
		queueEntries  = flag.Uint("queue-entries", 1<<19, "queue size in entries (power of two)")
		counters      = flag.Bool("counters", true, "also read the driver's counters")
		gz            = flag.Bool("gzip", true, "write NAME.bin.gz instead of NAME.bin")
		procRoot      = flag.String("proc", "/proc", "procfs root")
		attachTimeout = flag.Duration("attach-timeout", 60*time.Second, "give up attaching after this long")
		poll          = flag.Duration("poll", 5*time.Millisecond, "how often the queue is drained")
		version       = flag.Uint("version", 0, "entry layout: 0 auto (V2, else V1), 1 or 2")
	)
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s [flags] -- program [args...]\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(64)
	}
	code, err := run(config{
		out: *outDir, name: *name, waitFile: *waitFile, queue: uint32(*queueEntries), counters: *counters,
		gz: *gz, proc: *procRoot, attachTimeout: *attachTimeout, poll: *poll, argv: flag.Args(),
		version: uvmtools.Version(*version),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "uvmcapture: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

type config struct {
	out, name, waitFile, proc string
	queue                     uint32
	counters, gz              bool
	attachTimeout, poll       time.Duration
	argv                      []string
	version                   uvmtools.Version
}

// lockedBuffer collects the program's stdout while it is copied.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func run(c config) (int, error) {
	if c.waitFile != "" {
		if err := os.Remove(c.waitFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 1, err
		}
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return 1, err
	}
	var progOut lockedBuffer
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Stdout = io.MultiWriter(os.Stdout, &progOut)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 1, err
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	var progErr error
	go func() { progErr = cmd.Wait(); close(done) }()
	kill := func() { _ = cmd.Process.Signal(syscall.SIGKILL); <-done }

	tr, attempts, err := attach(c, pid, done)
	if err != nil {
		kill()
		return 1, err
	}
	attachDur := time.Since(start)
	fmt.Fprintf(os.Stderr, "uvmcapture: attached to pid %d after %v (%d attempts), V%d entries of %d bytes\n",
		pid, attachDur.Round(time.Microsecond), attempts, tr.Version(), tr.EntrySize())
	var table uvmtools.ProcessorTable
	refreshTable := func() {
		if t, err := tr.Processors(); err == nil && len(t.GPUs()) >= len(table.GPUs()) {
			table = t
		} else if err != nil {
			fmt.Fprintf(os.Stderr, "uvmcapture: processor table: %v\n", err)
		}
	}
	refreshTable()
	if c.waitFile != "" {
		if err := os.WriteFile(c.waitFile, nil, 0o644); err != nil {
			tr.Close()
			kill()
			return 1, err
		}
	}

	binPath := filepath.Join(c.out, c.name+".bin")
	if c.gz {
		binPath += ".gz"
	}
	f, err := os.Create(binPath)
	if err != nil {
		tr.Close()
		kill()
		return 1, err
	}
	var w io.Writer
	bw := bufio.NewWriterSize(f, 1<<20)
	var zw *gzip.Writer
	if c.gz {
		zw = gzip.NewWriter(bw)
		w = zw
	} else {
		w = bw
	}
	var z uvmtools.Summarizer
	var entries uint64
	var writeErr error
	handle := func(b []byte) {
		entries++
		if _, err := w.Write(b); err != nil && writeErr == nil {
			writeErr = err
		}
		if e, err := uvmtools.Decode(b); err != nil {
			z.AddError()
		} else {
			z.Add(e)
		}
	}
	drain := func() int {
		n, _, err := tr.ReadRaw(handle)
		if err != nil && writeErr == nil {
			writeErr = err
		}
		return n
	}

	lastTable := time.Now()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			_, _ = tr.Wait(c.poll)
		}
		drain()
		if time.Since(lastTable) > time.Second {
			refreshTable()
			lastTable = time.Now()
		}
	}
	// The program is gone; migrations and replays it started are delivered
	// when their GPU work completes. Flush, then read until quiet.
	for quiet := 0; quiet < 3; {
		if err := tr.Flush(); err != nil {
			fmt.Fprintf(os.Stderr, "uvmcapture: flush: %v\n", err)
		}
		time.Sleep(20 * time.Millisecond)
		if drain() == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	refreshTable()
	stats := tr.Stats()
	cnt, haveCounters := tr.Counters()
	tr.Close()

	if zw != nil {
		if err := zw.Close(); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	if err := bw.Flush(); err != nil && writeErr == nil {
		writeErr = err
	}
	if err := f.Close(); err != nil && writeErr == nil {
		writeErr = err
	}
	if writeErr != nil {
		return 1, fmt.Errorf("writing %s: %w", binPath, writeErr)
	}

	meta := uvmtools.FixtureMeta{
		Format:       uvmtools.FixtureFormat,
		EntrySize:    tr.EntrySize(),
		ABIVersion:   int(tr.Version()),
		Driver:       firstLine("/proc/driver/nvidia/version"),
		Kernel:       kernelRelease(),
		Command:      c.argv,
		PID:          pid,
		AttachMS:     float64(attachDur.Microseconds()) / 1000,
		Attempts:     attempts,
		QueueEntries: c.queue,
		Entries:      entries,
		Dropped:      stats.Dropped,
		Processors:   uvmtools.FixtureProcessors(table),
		Program:      programJSON(progOut.String()),
		Summary:      z.Summary(),
	}
	if len(stats.DroppedByType) > 0 {
		meta.DroppedByType = map[string]uint64{}
		for t, n := range stats.DroppedByType {
			meta.DroppedByType[t.String()] = n
		}
	}
	if haveCounters {
		meta.Counters = &cnt
	}
	mb, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return 1, err
	}
	jsonPath := filepath.Join(c.out, c.name+".json")
	if err := os.WriteFile(jsonPath, append(mb, '\n'), 0o644); err != nil {
		return 1, err
	}

	fmt.Printf("== uvmcapture %s: %d entries (V%d, %d bytes each), dropped %d, attach %.1f ms\n",
		c.name, entries, tr.Version(), tr.EntrySize(), stats.Dropped, meta.AttachMS)
	for _, p := range meta.Processors {
		fmt.Printf("processor %d: %s %s\n", p.Index, p.UUID, p.HWID)
	}
	if haveCounters {
		fmt.Printf("counters: HtD %d B, DtH %d B, CPU faults %d, GPU faults %d\n", cnt.BytesHtD, cnt.BytesDtH, cnt.CPUPageFaults, cnt.GPUPageFaults)
	}
	meta.Summary.Fprint(os.Stdout)
	fmt.Printf("fixture: %s %s\n", binPath, jsonPath)

	if progErr != nil {
		var ee *exec.ExitError
		if errors.As(progErr, &ee) {
			return ee.ExitCode(), fmt.Errorf("program: %v", progErr)
		}
		return 1, fmt.Errorf("program: %v", progErr)
	}
	return 0, nil
}

// attach polls the program's fds until it has a UVM VA space, then opens a
// tracker on it.
func attach(c config, pid int, done <-chan struct{}) (*uvmtools.Tracker, int, error) {
	opts := uvmtools.Options{QueueEntries: c.queue, Counters: c.counters, Version: c.version}
	deadline := time.Now().Add(c.attachTimeout)
	attempts := 0
	var last error
	for {
		_, err := uvmtools.FindUVMFds(c.proc, pid)
		if err == nil {
			attempts++
			tr, err := uvmtools.Open(c.proc, pid, opts)
			if err == nil {
				return tr, attempts, nil
			}
			err = fmt.Errorf("open: %w", err)
			if !errors.Is(err, uvmtools.ErrNotCUDA) {
				return nil, attempts, err
			}
			last = err
		} else if errors.Is(err, uvmtools.ErrNoProcess) {
			select {
			case <-done:
				return nil, attempts, fmt.Errorf("the program exited before a tracker could attach (last: %v)", last)
			case <-time.After(time.Second):
				return nil, attempts, err
			}
		} else if !errors.Is(err, uvmtools.ErrNotCUDA) {
			return nil, attempts, err
		} else {
			last = err
		}
		select {
		case <-done:
			return nil, attempts, fmt.Errorf("the program exited before a tracker could attach (last: %v)", last)
		case <-time.After(200 * time.Microsecond):
		}
		if time.Now().After(deadline) {
			return nil, attempts, fmt.Errorf("no UVM VA space after %v (last: %v)", c.attachTimeout, last)
		}
	}
}

// programJSON is the program's last stdout line that is a JSON object.
func programJSON(out string) json.RawMessage {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "{") && json.Valid([]byte(l)) {
			return json.RawMessage(l)
		}
	}
	return nil
}

func firstLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	l, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(l)
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
