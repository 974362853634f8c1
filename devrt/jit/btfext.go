package jit

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxSection bounds one ELF section of a probe object.
const MaxSection = 64 << 20

// checkELF validates what cilium/ebpf's reader trusts before it reads an
// object: it allocates what section sizes and .BTF.ext record counts say,
// so a corrupt size or count would exhaust memory instead of giving an
// error. Every section must lie inside the file and .BTF.ext's counts
// inside .BTF.ext.
func checkELF(r io.ReaderAt) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("not an ELF object: %w", err)
	}
	var one [1]byte
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue
		}
		if s.Size > MaxSection {
			return fmt.Errorf("section %s: %d bytes (at most %d)", s.Name, s.Size, MaxSection)
		}
		if _, err := r.ReadAt(one[:], int64(s.Offset+s.Size-1)); err != nil {
			return fmt.Errorf("section %s: %d bytes at %d lie outside the file", s.Name, s.Size, s.Offset)
		}
	}
	sec := f.Section(".BTF.ext")
	if sec == nil {
		return nil
	}
	if sec.Type == elf.SHT_NOBITS || sec.Size > 1<<28 {
		return errors.New(".BTF.ext: bad section")
	}
	b, err := sec.Data()
	if err != nil {
		return fmt.Errorf(".BTF.ext: %w", err)
	}
	if len(b) < 24 {
		return errors.New(".BTF.ext: short header")
	}
	bo := binary.ByteOrder(binary.LittleEndian)
	if bo.Uint16(b) != 0xeb9f {
		bo = binary.BigEndian
		if bo.Uint16(b) != 0xeb9f {
			return errors.New(".BTF.ext: bad magic")
		}
	}
	hdrLen := uint64(bo.Uint32(b[4:]))
	subs := [][2]uint64{
		{uint64(bo.Uint32(b[8:])), uint64(bo.Uint32(b[12:]))},  // func_info
		{uint64(bo.Uint32(b[16:])), uint64(bo.Uint32(b[20:]))}, // line_info
	}
	if hdrLen >= 32 && len(b) >= 32 {
		subs = append(subs, [2]uint64{uint64(bo.Uint32(b[24:])), uint64(bo.Uint32(b[28:]))}) // CO-RE relocations
	}
	for _, s := range subs {
		start, n := hdrLen+s[0], s[1]
		if n == 0 {
			continue
		}
		if start > uint64(len(b)) || n > uint64(len(b))-start {
			return errors.New(".BTF.ext: subsection outside the section")
		}
		if err := checkExtInfo(b[start:start+n], bo); err != nil {
			return fmt.Errorf(".BTF.ext: %w", err)
		}
	}
	return nil
}

// checkExtInfo checks one subsection: a record size, then sections of
// {name, count, count records}, each within the subsection.
func checkExtInfo(b []byte, bo binary.ByteOrder) error {
	if len(b) < 4 {
		return errors.New("short subsection")
	}
	size := uint64(bo.Uint32(b))
	if size == 0 || size > 1024 {
		return fmt.Errorf("record size %d", size)
	}
	for o := uint64(4); o < uint64(len(b)); {
		if uint64(len(b))-o < 8 {
			return errors.New("truncated section header")
		}
		count := uint64(bo.Uint32(b[o+4:]))
		o += 8
		if count*size > uint64(len(b))-o {
			return fmt.Errorf("%d records of %d bytes in %d bytes", count, size, uint64(len(b))-o)
		}
		o += count * size
	}
	return nil
}
