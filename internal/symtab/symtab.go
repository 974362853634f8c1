// Package symtab names code addresses inside a running process from the ELF
// symbol tables of the files it maps. The collector uses it for the host
// stubs that cudaLaunchKernel receives, whose names are the kernels' names.
package symtab

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"

	"github.com/otelcol-gpu/otelcol-gpu/internal/procmaps"
)

type fileKey struct{ dev, ino uint64 }

type sym struct {
	addr, size uint64
	name       string
}

// table is one file's function symbols sorted by address, and its
// executable segments for file offset → virtual address conversion.
type table struct {
	syms  []sym
	progs []elf.ProgHeader
}

// Symbolizer caches symbol tables per file (device and inode), so every
// process mapping the same file shares one table.
//
// Reading a process's maps and a library's symbol table can take
// milliseconds (seconds for a big .symtab), so the collector does not do it
// on the goroutine that drains the ring: Lookup answers from what is known
// and queues the rest for a background worker (Start).
type Symbolizer struct {
	procRoot string
	maxFiles int

	mu      sync.Mutex
	files   map[fileKey]*table
	results map[query]string // resolved, not yet collected by Lookup ("" = no symbol)
	pending map[query]bool
	queue   chan query
	done    chan struct{}
	wg      sync.WaitGroup
}

type query struct {
	pid  uint32
	addr uint64
}

// maxResults bounds resolved names waiting to be collected.
const maxResults = 1 << 16

// New returns a symbolizer reading processes under procRoot, keeping at
// most maxFiles tables.
func New(procRoot string, maxFiles int) *Symbolizer {
	if maxFiles <= 0 {
		maxFiles = 256
	}
	return &Symbolizer{procRoot: procRoot, maxFiles: maxFiles, files: map[fileKey]*table{},
		results: map[query]string{}, pending: map[query]bool{}, queue: make(chan query, 1024)}
}

// Start runs the background worker that serves Lookup's queue.
func (s *Symbolizer) Start() {
	s.done = make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.done:
				return
			case q := <-s.queue:
				name, _ := s.Symbolize(q.pid, q.addr)
				s.mu.Lock()
				delete(s.pending, q)
				if len(s.results) < maxResults {
					s.results[q] = name
				}
				s.mu.Unlock()
			}
		}
	}()
}

// Close stops the worker.
func (s *Symbolizer) Close() {
	if s.done != nil {
		close(s.done)
		s.wg.Wait()
		s.done = nil
	}
}

// Lookup never blocks: it returns the name of addr in pid when it has been
// resolved (done true; the name is "" when there is no symbol), and
// otherwise queues the question and returns done false — ask again later.
// A full queue drops the question; it is queued again on a later ask.
func (s *Symbolizer) Lookup(pid uint32, addr uint64) (name string, done bool) {
	q := query{pid, addr}
	s.mu.Lock()
	defer s.mu.Unlock()
	if name, ok := s.results[q]; ok {
		delete(s.results, q) // the caller keeps it from now on
		return name, true
	}
	if s.pending[q] {
		return "", false
	}
	select {
	case s.queue <- q:
		s.pending[q] = true
	default:
	}
	return "", false
}

// Symbolize returns the name of the function containing addr in process
// pid, as the symbol table spells it (mangled).
func (s *Symbolizer) Symbolize(pid uint32, addr uint64) (string, bool) {
	m, err := s.mappingOf(pid, addr)
	if err != nil {
		return "", false
	}
	key := fileKey{m.Dev(), m.Inode}
	s.mu.Lock()
	t, ok := s.files[key]
	s.mu.Unlock()
	if !ok {
		path := fmt.Sprintf("%s/%d/map_files/%x-%x", s.procRoot, pid, m.Start, m.End)
		if t, err = load(path); err != nil {
			return "", false
		}
		s.mu.Lock()
		if len(s.files) >= s.maxFiles {
			for k := range s.files { // evict an arbitrary entry
				delete(s.files, k)
				break
			}
		}
		s.files[key] = t
		s.mu.Unlock()
	}
	return t.lookup(addr - m.Start + m.Offset)
}

func (s *Symbolizer) mappingOf(pid uint32, addr uint64) (procmaps.Mapping, error) {
	f, err := os.Open(s.procRoot + "/" + strconv.FormatUint(uint64(pid), 10) + "/maps")
	if err != nil {
		return procmaps.Mapping{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		m, err := procmaps.ParseMapsLine(sc.Bytes())
		if err != nil || m.Inode == 0 {
			continue
		}
		if addr >= m.Start && addr < m.End {
			return m, nil
		}
	}
	return procmaps.Mapping{}, fmt.Errorf("address %#x not in a file mapping of pid %d", addr, pid)
}

func load(path string) (*table, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := &table{}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			t.progs = append(t.progs, p.ProgHeader)
		}
	}
	add := func(syms []elf.Symbol) {
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Name != "" {
				t.syms = append(t.syms, sym{s.Value, s.Size, s.Name})
			}
		}
	}
	if syms, err := f.Symbols(); err == nil {
		add(syms)
	}
	if syms, err := f.DynamicSymbols(); err == nil {
		add(syms)
	}
	sort.Slice(t.syms, func(i, j int) bool { return t.syms[i].addr < t.syms[j].addr })
	return t, nil
}

// lookup finds the function containing the file offset off.
func (t *table) lookup(off uint64) (string, bool) {
	var vaddr uint64
	found := false
	for _, p := range t.progs {
		if off >= p.Off && off < p.Off+p.Filesz {
			vaddr, found = off-p.Off+p.Vaddr, true
			break
		}
	}
	if !found {
		return "", false
	}
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].addr > vaddr }) - 1
	if i < 0 {
		return "", false
	}
	s := t.syms[i]
	if vaddr >= s.addr && (vaddr < s.addr+s.size || (s.size == 0 && vaddr == s.addr)) {
		return s.name, true
	}
	return "", false
}
