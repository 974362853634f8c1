package check

import (
	"fmt"
	"strings"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
)

// HarnessKernel is the name of the test kernel in every case's module.
const HarnessKernel = "gx_test"

// Module is the case's self-contained PTX module: the compiled fragment
// and a kernel gx_test(u64 out, u64 ctxs) in which every thread loads its
// entry ctx (ctxs[tid][0], 24 bytes), calls the entry probe's harness
// function with it as devrt/ptx's call sites do (three .u64 .params: site
// << 32 | kind, addr, kernel_id) and stores its r0 at out[2*tid]; with an
// exit program it then (after an optional spin) does the same with
// ctxs[tid][1] (its addr replaced by the entry's r0 when the exit carries
// it, as devrt/ptx's exit sites pass entry_ret) and out[2*tid+1]. Lanes outside the case's pattern call nothing. The
// driver sets __gpuext_shared before the launch.
func (c *Case) Module(comp *jit.Compiled) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	fmt.Fprintf(&b, "// devrt/jit GPU check case %s: %s/%s", c.Name, c.Object, c.Entry)
	if c.Exit != "" {
		fmt.Fprintf(&b, "+%s", c.Exit)
	}
	fmt.Fprintf(&b, ", grid %v block %v, %s level, lanes %s\n", c.Grid, c.Block,
		map[bool]string{false: "warp", true: "thread"}[c.PerThread], c.activeName())
	b.WriteString(".version 8.0\n.target sm_80\n.address_size 64\n\n")
	b.WriteString(comp.PTX)
	fmt.Fprintf(&b, "\n.visible .entry %s(.param .u64 gx_out, .param .u64 gx_ctxs)\n{\n", HarnessKernel)
	w(".reg .b64 %%x<16>;")
	w(".reg .b32 %%y<8>;")
	w(".reg .pred %%q<4>;")
	w("ld.param.u64 %%x0, [gx_out];")
	w("ld.param.u64 %%x1, [gx_ctxs];")
	w("cvta.to.global.u64 %%x0, %%x0;")
	w("cvta.to.global.u64 %%x1, %%x1;")
	if comp.BlockInit != "" {
		// as devrt/ptx's kernel entry: the per-block arrays zeroed
		// before any probe of the block runs
		w("call %s;", comp.BlockInit)
		w("bar.sync 0;")
	}
	sreg := func(dst, s string) {
		w("mov.u32 %%y0, %s;", s)
		w("cvt.u64.u32 %s, %%y0;", dst)
	}
	// block linear id %x2, threads per block %x3, thread in block %x4
	sreg("%x2", "%ctaid.z")
	sreg("%x6", "%nctaid.y")
	w("mul.lo.u64 %%x2, %%x2, %%x6;")
	sreg("%x6", "%ctaid.y")
	w("add.s64 %%x2, %%x2, %%x6;")
	sreg("%x6", "%nctaid.x")
	w("mul.lo.u64 %%x2, %%x2, %%x6;")
	sreg("%x6", "%ctaid.x")
	w("add.s64 %%x2, %%x2, %%x6;")
	sreg("%x3", "%ntid.x")
	sreg("%x6", "%ntid.y")
	w("mul.lo.u64 %%x3, %%x3, %%x6;")
	sreg("%x6", "%ntid.z")
	w("mul.lo.u64 %%x3, %%x3, %%x6;")
	sreg("%x4", "%tid.z")
	sreg("%x6", "%ntid.y")
	w("mul.lo.u64 %%x4, %%x4, %%x6;")
	sreg("%x6", "%tid.y")
	w("add.s64 %%x4, %%x4, %%x6;")
	sreg("%x6", "%ntid.x")
	w("mul.lo.u64 %%x4, %%x4, %%x6;")
	sreg("%x6", "%tid.x")
	w("add.s64 %%x4, %%x4, %%x6;")
	w("mul.lo.u64 %%x5, %%x2, %%x3;")
	w("add.s64 %%x5, %%x5, %%x4;") // global thread id
	w("cvt.u32.u64 %%y1, %%x4;")
	guard := ""
	switch c.Active {
	case "odd":
		w("and.b32 %%y2, %%y1, 1;")
		w("setp.eq.u32 %%q0, %%y2, 1;")
		guard = "@%q0 "
	case "mixed":
		w("mul.lo.u32 %%y2, %%y1, 7;")
		w("rem.u32 %%y2, %%y2, 5;")
		w("setp.lt.u32 %%q0, %%y2, 3;")
		guard = "@%q0 "
	}
	call := func(probe, which int) {
		// ctx of this call: ctxs + (gtid*2 + which)*24
		w("mul.lo.u64 %%x6, %%x5, %d;", 2*jit.CtxSize)
		w("add.s64 %%x6, %%x6, %d;", which*jit.CtxSize)
		w("add.s64 %%x6, %%x1, %%x6;")
		for o := 0; o < jit.CtxSize; o += 8 {
			w("ld.global.u64 %%x%d, [%%x6+%d];", 7+o/8, o)
		}
		if which == 1 && comp.Probes[probe].Carry != "" {
			w("mov.b64 %%x8, %%x13;") // ctx->entry_ret: the entry's r0
		}
		w("{")
		for a := 0; a < jit.CtxSize/8; a++ {
			w(".param .u64 gx_p%d;", a)
		}
		for a := 0; a < jit.CtxSize/8; a++ {
			w("st.param.u64 [gx_p%d], %%x%d;", a, 7+a)
		}
		w(".param .b64 gx_r;")
		w("%scall (gx_r), %s, (gx_p0, gx_p1, gx_p2);", guard, jit.RunFunc(probe))
		w("ld.param.b64 %%x9, [gx_r];")
		w("}")
		w("mul.lo.u64 %%x6, %%x5, 16;")
		w("add.s64 %%x6, %%x6, %d;", 8*which)
		w("add.s64 %%x6, %%x0, %%x6;")
		w("%sst.global.u64 [%%x6], %%x9;", guard)
	}
	call(0, 0)
	w("mov.b64 %%x13, %%x9;")
	if c.Exit != "" {
		if c.Work {
			// spin (block id % 4) * 20 us: an imbalanced kernel
			w("mov.u64 %%x10, %%globaltimer;")
			w("rem.u64 %%x11, %%x2, 4;")
			w("mul.lo.u64 %%x11, %%x11, 20000;")
			w("add.s64 %%x11, %%x10, %%x11;")
			b.WriteString("$GX_SPIN:\n")
			w("mov.u64 %%x12, %%globaltimer;")
			w("setp.lt.u64 %%q1, %%x12, %%x11;")
			w("@%%q1 bra $GX_SPIN;")
		}
		call(1, 1)
	}
	w("ret;")
	b.WriteString("}\n")
	return b.String()
}

func (c *Case) activeName() string {
	if c.Active == "" {
		return "all"
	}
	return c.Active
}

// Ctxs is the ctx input of every thread: [threads][2][24] bytes.
func (c *Case) Ctxs() []byte {
	n := c.Threads()
	out := make([]byte, 0, n*2*jit.CtxSize)
	for g := 0; g < n; g++ {
		e := c.Ctx(uint64(g), 1)
		x := c.Ctx(uint64(g), 2)
		out = append(out, e[:]...)
		out = append(out, x[:]...)
	}
	return out
}
