// Package misbehave holds gpu_ext struct_ops policies that ask the module
// for everything it must refuse or clamp (testdata/misbehave.bpf.c), and the
// kernel test that drives them through gpu_ext_sim: the proof that gpu_ext
// validates every request after the callback, returns the right errno from
// each kfunc, and counts each request exactly once. Well-behaved policies
// live in bpf/policy; this package has no code outside its tests.
package misbehave
