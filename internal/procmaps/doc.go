// Package procmaps finds the processes that have a given shared library
// mapped, by reading /proc/<pid>/maps.
//
// The receiver attaches uprobes once per library file (per device and
// inode), not once per process, and filters by pid in BPF; so what it needs
// from each process is which library files it maps, how to open them and
// where they are mapped. A library inside a container lives in another mount
// namespace, where its path means nothing to the collector; Library carries
// the /proc/<pid>/map_files link that opens the very file the process
// mapped, whatever namespace it is in and even after it was deleted.
//
// All functions take the procfs root as a parameter so that the host's /proc
// can be mounted elsewhere (/host/proc) and tests can use fake trees.
package procmaps
