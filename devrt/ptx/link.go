package ptx

import (
	"fmt"
	"strconv"
)

// DynamicSharedAlign is what Link rounds a fragment's .shared variables up
// to, in alignment and in size, when m has dynamic shared memory.
//
// A kernel's dynamic shared memory (its `.extern .shared` array) begins
// where the static arrays end, so a fragment's .shared array moves it. A
// kernel that declares no static shared memory finds its dynamic memory at
// offset 0 and may build on that: Triton's Hopper GEMM lays its operand
// tiles out for wgmma's 128-byte swizzle, which the hardware applies to
// the address bits of the tile, so it needs each tile on a 1,024-byte
// boundary though its PTX declares `.align 16`. block_sched's 24-byte
// per-block array moved that memory to offset 32: the GEMM (4096³ fp16,
// H100) ran 1.36x as long and computed a different product. Static
// arrays in multiples of 1,024 bytes keep dynamic memory on the same
// 1,024-byte boundary as before (every TMA and swizzle mode's largest),
// at up to 1 KiB of shared memory more per block, which a launch can then
// not take as dynamic memory (devrt runs the original kernel instead of
// a twin that refuses a launch's dynamic memory).
const DynamicSharedAlign = 1024

// Link adds the items of a JIT fragment (devrt/jit's output: .func
// definitions and .global, .const or .shared variables, no header) to m, before m's first
// function or variable so that every later use sees them declared. A name
// the fragment shares with m is an error (nothing is renamed), as is any
// other kind of item; on error m is unchanged. If m has dynamic shared
// memory, the fragment's .shared variables, which must then be byte
// arrays, are linked aligned and padded to DynamicSharedAlign (the
// fragment itself is not changed).
func Link(m *Module, fragment *Module) error {
	if fragment.Version != "" || len(fragment.Target) > 0 || fragment.AddressSize != 0 {
		return fmt.Errorf("ptx: link: a fragment has no .version/.target/.address_size header")
	}
	seen := map[string]Pos{}
	for _, it := range m.Items {
		if n := itemName(it); n != "" {
			seen[n] = itemPos(it)
		}
	}
	own := map[string]bool{}
	for _, it := range fragment.Items {
		switch it := it.(type) {
		case *Function:
			if it.Entry || it.Body == nil || it.Linkage == ".extern" {
				return fmt.Errorf("ptx: link: fragment %s at %s: only .func definitions and .global, .const or .shared variables may be linked", it.Name, it.Pos)
			}
		case *Var:
			if (it.Space != ".global" && it.Space != ".const" && it.Space != ".shared") || it.Linkage == ".extern" {
				return fmt.Errorf("ptx: link: fragment variable %s at %s is in %s%s: only .global, .const and .shared definitions may be linked", it.Name, it.Pos, it.Linkage, it.Space)
			}
		default:
			return fmt.Errorf("ptx: link: fragment item %T at %s: only .func definitions and .global, .const or .shared variables may be linked", it, itemPos(it))
		}
		n := itemName(it)
		if p, ok := seen[n]; ok {
			return fmt.Errorf("ptx: link: fragment symbol %s (fragment %s) is already defined by the module at %s", n, itemPos(it), p)
		}
		if own[n] {
			return fmt.Errorf("ptx: link: fragment defines %s twice (%s)", n, itemPos(it))
		}
		own[n] = true
	}
	linked := fragment.Items
	if hasDynamicShared(m) {
		linked = make([]Item, len(fragment.Items))
		for i, it := range fragment.Items {
			linked[i] = it
			if v, ok := it.(*Var); ok && v.Space == ".shared" {
				padded, err := padShared(v)
				if err != nil {
					return err
				}
				linked[i] = padded
			}
		}
	}
	at := len(m.Items)
	for i, it := range m.Items {
		_, isFunc := it.(*Function)
		_, isVar := it.(*Var)
		if isFunc || isVar {
			at = i
			break
		}
	}
	items := make([]Item, 0, len(m.Items)+len(fragment.Items))
	items = append(items, m.Items[:at]...)
	items = append(items, linked...)
	m.Items = append(items, m.Items[at:]...)
	return nil
}

// hasDynamicShared tells whether m declares an `.extern .shared` array, at
// module level or in a function.
func hasDynamicShared(m *Module) bool {
	dynamic := func(v *Var) bool { return v.Space == ".shared" && v.Linkage == ".extern" }
	for _, it := range m.Items {
		switch it := it.(type) {
		case *Var:
			if dynamic(it) {
				return true
			}
		case *Function:
			found := false
			Walk(it.Body, func(s Stmt, _ *Block, _ int) bool {
				if v, ok := s.(*Var); ok && dynamic(v) {
					found = true
				}
				return !found
			})
			if found {
				return true
			}
		}
	}
	return false
}

// padShared returns a copy of the fragment's byte array v sized to a
// multiple of DynamicSharedAlign and aligned to it (or to v's own
// alignment, if larger).
func padShared(v *Var) (*Var, error) {
	var n uint64
	ok := len(v.Dims) == 1 && v.Vector == "" && (v.Type == ".b8" || v.Type == ".u8" || v.Type == ".s8") && v.Init == nil
	if ok {
		var err error
		n, err = strconv.ParseUint(v.Dims[0], 0, 32)
		ok = err == nil
	}
	if !ok {
		return nil, fmt.Errorf("ptx: link: fragment variable %s at %s: beside dynamic shared memory a fragment's .shared variable must be a byte array of known size", v.Name, v.Pos)
	}
	p := *v
	if a, err := strconv.ParseUint(v.Align, 0, 32); err != nil || a < DynamicSharedAlign {
		p.Align = strconv.Itoa(DynamicSharedAlign)
	}
	p.Dims = []string{strconv.FormatUint((n+DynamicSharedAlign-1)/DynamicSharedAlign*DynamicSharedAlign, 10)}
	return &p, nil
}

func itemPos(it Item) Pos {
	switch it := it.(type) {
	case *Function:
		return it.Pos
	case *Var:
		return it.Pos
	case *File:
		return it.Pos
	case *Section:
		return it.Pos
	case *Pragma:
		return it.Pos
	case *Alias:
		return it.Pos
	}
	return Pos{}
}
