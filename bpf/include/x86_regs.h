/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * x86_regs.h - the kernel's struct pt_regs for x86-64, which is what a uprobe
 * program receives. Declared here so the programs need neither vmlinux.h nor
 * the architecture's uapi headers; the layout is the kernel's ABI.
 */
#ifndef GPUEXT_X86_REGS_H
#define GPUEXT_X86_REGS_H

#include <linux/types.h>

#if !defined(__TARGET_ARCH_x86)
#error "only x86-64 is supported: build with -D__TARGET_ARCH_x86"
#endif

struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10;
	unsigned long r9, r8, ax, cx, dx, si, di, orig_ax;
	unsigned long ip, cs, flags, sp, ss;
};

/* System V AMD64 integer argument registers, in order. */
#define REG_ARG1(r) ((r)->di)
#define REG_ARG2(r) ((r)->si)
#define REG_ARG3(r) ((r)->dx)
#define REG_ARG4(r) ((r)->cx)
#define REG_ARG5(r) ((r)->r8)
#define REG_ARG6(r) ((r)->r9)
#define REG_RET(r) ((r)->ax)
/* At a function's first instruction the stack pointer points at the return
 * address; stack arguments 7, 8, 9 follow it. */
#define REG_SP(r) ((r)->sp)

#endif
