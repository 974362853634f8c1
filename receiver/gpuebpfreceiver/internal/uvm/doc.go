// Package uvm is the UVM source of the gpuebpf receiver: it turns the
// events of NVIDIA's UVM tools interface (package uvmtools) into
// cumulative metrics per process and per GPU, a classification of each
// process's recent GPU faults (package faultpattern), and optionally
// sampled fault addresses as log records.
//
// The receiver calls Track when the CUDA source first sees a process;
// a reader goroutine per tracked process drains its queue every
// poll_interval and hands the events to Consume, the one place where
// events are accounted (tests feed recorded captures through it too).
//
// Design notes:
//
//   - Resources: one per process and physical GPU (process.pid,
//     process.executable.name, container.id, k8s.pod.uid, hw.id =
//     GPU-<uuid> from the process's UVM processor table; MIG instances
//     share their GPU's), and one per process without hw.id for what
//     concerns no GPU: CPU faults, CPU-to-CPU migrations, thrashing, read
//     duplication, drops, and events of a GPU index not (yet) in the table.
//   - Migrations sit on the GPU end: the destination for htod and dtod,
//     the source for dtoh. Causes: coherence is "fault", the driver's
//     prefetcher "prefetch", eviction "eviction", user prefetch and advice
//     "explicit", anything else "other".
//   - Fault batches: the driver fetches GPU faults in batches, services
//     them and ends each with a replay (event gpu_fault_replay with the
//     batch id). gpu.uvm.fault.batch.size counts this process's faults in
//     a batch; gpu.uvm.fault.batch.duration is the replay's CPU timestamp
//     minus the earliest CPU timestamp of the batch's faults (both the
//     driver's CLOCK_MONOTONIC_RAW): from fetching the batch to replaying
//     it, after its migrations and mappings were issued. Migration end
//     times cannot serve: the driver stamps them when it notices
//     completion, often milliseconds later and for many batches at once.
//     Replays are queued late (after later batches' faults), so up to 256
//     batches per GPU stay open; a batch pushed out, or one never
//     replayed (non-replayable faults, replay events disabled), counts in
//     the size histogram only. Replays are broadcast to every traced
//     process; one that ends no batch of the process is ignored.
//   - Fault pattern: one faultpattern.Classifier per process and GPU, fed
//     GPU faults ordered by the GPU's timestamp; classified at Scrape and
//     Pattern, only when new faults arrived. Faults that resume after
//     pattern_idle_reset (1 s) without any start the window afresh: a new
//     phase of the program is judged on its own faults, not mixed with the
//     last phase's (on the H200, a 256-fault strided pass after a
//     1024-fault sweep read as random in a shared window).
//   - Fault samples (off by default): a token bucket per process on the
//     driver's event clock (max_per_second, burst of one second), gathered
//     into plog.Logs of up to 256 records, handed to a channel of fixed
//     size; what is refused is counted in gpu.uvm.fault.samples.dropped.
//   - Fault stream (on by default): every GPU and CPU fault also goes
//     into a ring of the latest fault_stream::capacity faults of its
//     process and GPU, in a faultstream.Hub registered under the
//     receiver's component ID; the gpupolicy processor reads it there, so
//     its decisions never depend on what a pipeline exports. 16 bytes a
//     sample, one uncontended lock per fault.
//   - Bounds: max_processes processes (events of more are counted as
//     dropped), 64 GPUs per process, 256 open batches per GPU, one
//     classifier window per GPU. Processes untracked or exited are
//     reported by one more Scrape, then forgotten.
//   - Track retries a process that has no UVM VA space yet
//     (uvmtools.ErrNotCUDA) on its own, with exponential backoff, a
//     bounded number of times (WithRetry); other errors are returned and
//     logged once per kind.
package uvm

//go:generate go tool mdatagen metadata.yaml
