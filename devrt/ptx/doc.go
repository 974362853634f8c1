// Package ptx parses, prints and instruments NVIDIA PTX assembly.
//
// Device probes run inside GPU kernels: the collector receives the PTX a
// process is about to load, inserts calls to probe functions (compiled from
// eBPF by devrt/jit) at kernel entry, before every exit and optionally before
// global loads and stores, and hands the patched PTX back to the device
// runtime. Doing that with regular expressions (as bpftime does) breaks on
// predicated or labelled exits, inline-asm scopes and register budgets, so
// this package works on a real syntax tree:
//
//   - Lex and Parse turn PTX text into a Module (directives, variables,
//     entries and functions with their parameters, register declarations,
//     labels, guarded instructions with dotted modifiers and operand
//     expressions, nested scopes, debug sections). Errors carry line:column;
//     no input makes the parser panic.
//   - Write prints a Module back as PTX whose token stream equals the input's
//     (modulo whitespace and comments).
//   - The analysis helpers (Kernels, Exits, MemAccesses, RegisterCounts, ...)
//     answer what the rewriter and the injection path need to know.
//   - Link adds a JIT fragment (.func definitions and .global declarations)
//     to a module; Instrument inserts the probe call sites into the kernels a
//     Spec selects and reports what it did.
//
// The package depends on the standard library only.
package ptx
