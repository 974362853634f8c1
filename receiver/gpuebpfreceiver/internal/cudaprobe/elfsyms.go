package cudaprobe

import (
	"debug/elf"
	"errors"
	"fmt"
	"sort"
)

// target is one function to probe in a library file.
type target struct {
	symbol string
	offset uint64 // file offset of the first instruction (what uprobes take)
	probe  probe
}

// entryOnly reports whether the target is reported at entry, without a
// return probe.
func (t target) entryOnly() bool { return t.probe.flags&ckEntryOnly != 0 }

// targets lists the probed functions that the ELF file at path defines, one
// per code address: when several names alias one address (a variant
// exported as an alias of another) only the first, in name order, is kept,
// since two uprobes on one address would report each call twice.
func targets(path string) ([]target, int, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("open ELF: %w", err)
	}
	defer f.Close()

	syms, err := f.DynamicSymbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, 0, fmt.Errorf("read dynamic symbols: %w", err)
	}
	// Executables that link the runtime statically have it in .symtab only.
	if st, err := f.Symbols(); err == nil {
		syms = append(syms, st...)
	}

	byName := map[string]uint64{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Section == elf.SHN_UNDEF {
			continue
		}
		if _, ok := symbols[s.Name]; !ok {
			continue
		}
		off, ok := fileOffset(f, s.Value)
		if !ok {
			continue
		}
		byName[s.Name] = off
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)

	seen := map[uint64]bool{}
	aliases := 0
	out := make([]target, 0, len(names))
	for _, n := range names {
		off := byName[n]
		if seen[off] {
			aliases++
			continue
		}
		seen[off] = true
		out = append(out, target{symbol: n, offset: off, probe: symbols[n]})
	}
	return out, aliases, nil
}

// fileOffset converts a virtual address to its offset in the file through
// the executable PT_LOAD segment that contains it.
func fileOffset(f *elf.File, vaddr uint64) (uint64, bool) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 {
			continue
		}
		if vaddr >= p.Vaddr && vaddr < p.Vaddr+p.Memsz {
			return vaddr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}
