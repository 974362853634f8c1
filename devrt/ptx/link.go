package ptx

import (
	"fmt"
)

// Link adds the items of a JIT fragment (devrt/jit's output: .func
// definitions and .global, .const or .shared variables, no header) to m, before m's first
// function or variable so that every later use sees them declared. A name
// the fragment shares with m is an error (nothing is renamed), as is any
// other kind of item; on error m is unchanged.
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
	items = append(items, fragment.Items...)
	m.Items = append(items, m.Items[at:]...)
	return nil
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
