// Package translate is the one place where decoded GPU events become pdata:
// spans per API call and per sampled GPU execution, cumulative gpu.cuda.*
// and gpu.kernel.* metrics and the receiver's own telemetry, whichever
// source (uprobes, devrt) the events came from. It keeps the per-process
// state that meaning needs (handle → kernel name tables, live allocations
// for frees and leak finding, the recent calls GPU executions link to) and
// bounds all of it.
//
// A Translator is not safe for concurrent use: the receiver drives it from
// one goroutine, which is also what makes it fast.
package translate
