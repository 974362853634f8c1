// Package injecttest gives tests of device probe injection a Patcher that
// changes nothing a kernel does, so the whole path (devrt's request, the
// server, the driver's load of the patched module, the shared region, the
// redirected launches) runs without the PTX rewriter and the probe
// compiler: it adds a comment and the declaration of the shared global
// after the module's header directives, and reports every .entry devrt
// named as patched.
package injecttest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
)

// Marker is the comment the Patcher adds.
const Marker = "// patched by injecttest (no probe calls)"

// MarkValue is what Mark stores: "GEXT_OK!" as a little-endian u64.
const MarkValue = 0x214b4f5f54584547

// Grid1DMarkValue is a Grid1DMark: "GEXT_1D!" as a little-endian u64.
const Grid1DMarkValue = 0x2144315f54584547

// markBlock is Mark's code, %s: a label unique in the kernel.
const markBlock = `
{
	.reg .b64 %%gxd<3>;
	.reg .b32 %%gxr<3>;
	.reg .pred %%gxp;
	mov.u32 %%gxr1, %%tid.x;
	mov.u32 %%gxr2, %%ctaid.x;
	or.b32 %%gxr1, %%gxr1, %%gxr2;
	setp.ne.u32 %%gxp, %%gxr1, 0;
	@%%gxp bra %s;
	ld.const.u64 %%gxd1, [__gpuext_shared];
	mov.u64 %%gxd2, 0x%x;
	st.global.u64 [%%gxd1], %%gxd2;
%s:
}
`

// Patcher is a devrtinject.Patcher for tests.
type Patcher struct {
	// SharedSize is the shared region each patched module asks for.
	SharedSize uint64
	// Init is the region's initial contents sent with each PATCHED.
	Init []devrtinject.InitRange
	// Reject and Unchanged list kernel names whose modules are answered
	// REJECTED (with the reason "rejected: <name>") or UNCHANGED.
	Reject, Unchanged map[string]bool
	// Delay makes each Patch wait this long first (or until cancelled).
	Delay time.Duration
	// Only, if set, limits the kernels reported patched to these (the
	// others stay in the module and run unredirected).
	Only map[string]bool
	// Mark makes each kernel's thread (0,0) store MarkValue at the start
	// of the shared region, through __gpuext_shared: a GPU test's proof
	// that the region is bound and reachable from device code. It adds a
	// scope of its own registers after the kernel's opening brace (plain
	// text search: kernels with one body brace after .entry).
	Mark bool
	// MaxNTID, if set, declares .maxntid MaxNTID, 1, 1 on each kernel: a
	// twin that refuses launches of larger blocks (the fake driver
	// enforces it), for tests of what devrt does then.
	MaxNTID int
	// StaticShared, if set, declares a .shared array of that many bytes,
	// as probes with per-block state do, and names it in each kernel: a
	// twin with that much less dynamic shared memory to give (the fake
	// driver enforces it); plain copies (Vars) do not name it.
	StaticShared int
	// Grid1D appends to the module, for each kernel reported patched, a
	// copy of its .entry (as Mark and MaxNTID left it) named with
	// devrtinject.Grid1DSuffix: the 1-D twin the collector may send,
	// which devrt must launch for one-dimensional grids only. As the
	// collector's rewriter, it makes none for a kernel whose copy's name
	// the module has already (one of the kernels devrt named: the
	// program's own kernel, which devrt must not take for a 1-D twin).
	Grid1D bool
	// Grid1DMaxNTID and Grid1DStaticShared, if set, declare on each copy
	// only .maxntid Grid1DMaxNTID, 1, 1 and a .shared array of that many
	// bytes in its body: a 1-D twin that refuses launches or settings its
	// twin takes (the fake driver bounds each kernel by its own).
	Grid1DMaxNTID, Grid1DStaticShared int
	// Grid1DMark, with Mark, is what each copy stores instead of
	// MarkValue: a GPU test's proof that the launch ran the 1-D twin.
	Grid1DMark uint64
	// Vars, if set, answers as for a module that declares these variables
	// (Result.Vars): every kernel devrt named is redirected, Only or not
	// (the twin owns the variables, as the collector answers then), and
	// each kernel reported patched gets its plain copy: the program's
	// .entry renamed with devrtinject.PlainSuffix (none for one whose
	// copy's name the module has). NoPlain leaves the copies out.
	Vars    []string
	NoPlain bool
	// PlainStaticShared, if set, declares in each plain copy's body a
	// .shared array of that many bytes: a plain copy that refuses what
	// its original takes.
	PlainStaticShared int

	calls atomic.Int64
	mu    sync.Mutex
	seen  map[[32]byte]int
}

// Version is the probe set's: fixed.
func (p *Patcher) Version() uint64 { return 7 }

// Calls is how many times Patch ran.
func (p *Patcher) Calls() int64 { return p.calls.Load() }

// Seen is how many times Patch ran for the PTX of this hash.
func (p *Patcher) Seen(h [32]byte) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[h]
}

var directives = [][]byte{[]byte(".version"), []byte(".target"), []byte(".address_size")}

// Patch adds the marker and the global after the last header directive.
func (p *Patcher) Patch(ctx context.Context, m *devrtinject.Module) (devrtinject.Result, error) {
	p.calls.Add(1)
	p.mu.Lock()
	if p.seen == nil {
		p.seen = map[[32]byte]int{}
	}
	p.seen[m.Hash]++
	p.mu.Unlock()
	if p.Delay > 0 {
		select {
		case <-time.After(p.Delay):
		case <-ctx.Done():
			return devrtinject.Result{}, ctx.Err()
		}
	}
	if len(m.Kernels) == 0 {
		return devrtinject.Result{Status: devrtinject.StatusUnchanged, Reason: "no kernels"}, nil
	}
	for _, k := range m.Kernels {
		if p.Reject[k] {
			return devrtinject.Result{Status: devrtinject.StatusRejected, Reason: "rejected: " + k}, nil
		}
		if p.Unchanged[k] {
			return devrtinject.Result{Status: devrtinject.StatusUnchanged}, nil
		}
	}
	at := -1
	for _, d := range directives {
		if i := bytes.Index(m.PTX, d); i >= 0 {
			if j := bytes.IndexByte(m.PTX[i:], '\n'); j >= 0 && i+j+1 > at {
				at = i + j + 1
			}
		}
	}
	if at < 0 {
		return devrtinject.Result{}, fmt.Errorf("no header directives")
	}
	var out bytes.Buffer
	out.Write(m.PTX[:at])
	fmt.Fprintf(&out, "%s\n.visible .const .align 8 .u64 %s;\n", Marker, devrtinject.SharedGlobal)
	if p.StaticShared > 0 {
		fmt.Fprintf(&out, ".shared .align 8 .b8 __gpuext_test_block[%d];\n", p.StaticShared)
	}
	rest := m.PTX[at:]
	for n := 0; p.Mark || p.MaxNTID > 0 || p.StaticShared > 0; n++ {
		e := bytes.Index(rest, []byte(".entry"))
		if e < 0 {
			break
		}
		b := bytes.IndexByte(rest[e:], '{')
		if b < 0 {
			break
		}
		out.Write(rest[:e+b])
		if p.MaxNTID > 0 {
			fmt.Fprintf(&out, ".maxntid %d, 1, 1\n", p.MaxNTID)
		}
		out.WriteByte('{')
		if p.StaticShared > 0 {
			// used by the kernel, as a probe uses its per-block array
			// (the driver, and the fake, allocate it only then)
			out.WriteString("\n\t{\n\t.reg .b64 %gxsh;\n\tmov.u64 %gxsh, __gpuext_test_block;\n\t}")
		}
		if p.Mark {
			label := fmt.Sprintf("$GX_SKIP_%d", n)
			fmt.Fprintf(&out, markBlock, label, uint64(MarkValue), label)
		}
		rest = rest[e+b+1:]
	}
	out.Write(rest)
	var kernels []string
	for _, k := range m.Kernels {
		if p.Only == nil || p.Only[k] {
			kernels = append(kernels, k)
		}
	}
	if len(kernels) == 0 {
		return devrtinject.Result{Status: devrtinject.StatusUnchanged}, nil
	}
	if p.Grid1D {
		body := out.Bytes()
		var copies bytes.Buffer
		for _, k := range kernels {
			if slices.Contains(m.Kernels, k+devrtinject.Grid1DSuffix) {
				continue
			}
			e, ok := p.grid1D(body, k)
			if !ok {
				return devrtinject.Result{}, fmt.Errorf("kernel %s: no .entry with a body", k)
			}
			copies.WriteString("\n")
			copies.Write(e)
		}
		out.Write(copies.Bytes())
	}
	if len(p.Vars) > 0 {
		// each reported kernel's plain copy, then every kernel
		for _, k := range kernels {
			if p.NoPlain {
				break
			}
			if slices.Contains(m.Kernels, k+devrtinject.PlainSuffix) {
				continue
			}
			e, ok := plainCopy(m.PTX, k)
			if !ok {
				return devrtinject.Result{}, fmt.Errorf("kernel %s: no .entry with a body", k)
			}
			if p.PlainStaticShared > 0 {
				e = bytes.Replace(e, []byte("{"), fmt.Appendf(nil, "{\n\t.shared .align 8 .b8 __gpuext_test_plain[%d];", p.PlainStaticShared), 1)
			}
			out.WriteString("\n")
			out.Write(e)
		}
		kernels = slices.Clone(m.Kernels)
	}
	return devrtinject.Result{Status: devrtinject.StatusPatched, PTX: out.Bytes(),
		Kernels: kernels, SharedSize: p.SharedSize, Init: p.Init, Vars: p.Vars}, nil
}

// entrySpan finds kernel name's .entry in ptx: the start of its line, of
// ".entry", of its body's opening brace and its closing brace; false if
// there is none (plain text search: the name followed by "(" or white
// space, braces counted).
func entrySpan(ptx []byte, name string) (start, at, open, end int, ok bool) {
	at = -1
	for i := 0; at < 0; {
		j := bytes.Index(ptx[i:], []byte(".entry "+name))
		if j < 0 {
			return 0, 0, 0, 0, false
		}
		i += j
		if e := i + len(".entry "+name); e < len(ptx) && bytes.IndexByte([]byte("( \t\n"), ptx[e]) >= 0 {
			at = i
		}
		i++
	}
	start = bytes.LastIndexByte(ptx[:at], '\n') + 1
	open = bytes.IndexByte(ptx[at:], '{')
	if open < 0 {
		return 0, 0, 0, 0, false
	}
	open += at
	depth := 0
	for end = open; end < len(ptx); end++ {
		if ptx[end] == '{' {
			depth++
		} else if ptx[end] == '}' {
			if depth--; depth == 0 {
				break
			}
		}
	}
	return start, at, open, end, end < len(ptx)
}

// plainCopy is kernel name's .entry as the program's module src has it,
// renamed name + devrtinject.PlainSuffix (what the collector adds where the
// twin owns the module's variables); false if there is none.
func plainCopy(src []byte, name string) ([]byte, bool) {
	start, at, _, end, ok := entrySpan(src, name)
	if !ok {
		return nil, false
	}
	e := renamed(src, start, at, name+devrtinject.PlainSuffix)
	e.Write(src[at+len(".entry "+name) : end+1])
	e.WriteString("\n")
	return e.Bytes(), true
}

// renamed starts a copy of the .entry at ptx[at:] (its line from start)
// named name.
func renamed(ptx []byte, start, at int, name string) *bytes.Buffer {
	var e bytes.Buffer
	e.Write(ptx[start:at])
	e.WriteString(".entry " + name)
	return &e
}

// grid1D is the copy of kernel name's .entry in ptx (from the start of its
// line to its body's closing brace) renamed name + devrtinject.Grid1DSuffix,
// with Grid1DMaxNTID and Grid1DStaticShared declared; false if there is
// none.
func (p *Patcher) grid1D(ptx []byte, name string) ([]byte, bool) {
	start, at, open, end, ok := entrySpan(ptx, name)
	if !ok {
		return nil, false
	}
	e := renamed(ptx, start, at, name+devrtinject.Grid1DSuffix)
	e.Write(ptx[at+len(".entry "+name) : open])
	if p.Grid1DMaxNTID > 0 {
		fmt.Fprintf(e, ".maxntid %d, 1, 1\n", p.Grid1DMaxNTID)
	}
	e.WriteByte('{')
	if p.Grid1DStaticShared > 0 {
		fmt.Fprintf(e, "\n\t.shared .align 8 .b8 __gpuext_test_grid1d[%d];", p.Grid1DStaticShared)
	}
	body := ptx[open+1 : end+1]
	if p.Mark && p.Grid1DMark != 0 {
		body = bytes.ReplaceAll(body, fmt.Appendf(nil, "mov.u64 %%gxd2, 0x%x;", uint64(MarkValue)),
			fmt.Appendf(nil, "mov.u64 %%gxd2, 0x%x;", p.Grid1DMark))
	}
	e.Write(body)
	e.WriteString("\n")
	return e.Bytes(), true
}
