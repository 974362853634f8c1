// Package uvm is the UVM source of the gpuebpf receiver: it turns what
// NVIDIA's unified-memory driver does into cumulative metrics per process
// and per GPU, a classification of each process's recent GPU faults
// (package faultpattern), and optionally sampled fault addresses as log
// records.
//
// Two backends feed it (config backend, chosen once by Start):
//
//   - tools: the driver's UVM tools interface (package uvmtools). The
//     receiver calls Track when the CUDA source first sees a process; a
//     reader goroutine per tracked process drains its queue every
//     poll_interval and hands the events to the accounting. Works under
//     kernel lockdown.
//   - fentry: eBPF programs on nvidia_uvm's functions (package uvmfentry),
//     one ring buffer for every process, read by one goroutine; Track only
//     tells the kernel which processes to report. Needs the module's BTF
//     and a kernel that lets tracing programs attach (no lockdown).
//   - auto (default): fentry where it loads, else tools; the reason
//     fentry cannot run is logged once, and the backend running is logged
//     at start and reported as gpu.uvm.backend.active{gpu.uvm.backend}.
//     A forced fentry that cannot run fails Start (and Track) with the
//     reason; forced tools never loads BPF. Start is called by Track when
//     the receiver has not.
//
// Either way events reach account, the one place where they are counted:
// the fentry backend's records are turned into the tools interface's
// events (uvmfentry: same causes, access and fault types, the driver's
// processor ids), so both fill the same metrics the same way, batch sizes
// and durations included (a replay record ends a batch as a replay event
// does). Tests feed recorded captures through Consume.
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
//   - Only one backend sees: fentry alone gives gpu.uvm.prefetch.hinted
//     (pages the prefetcher added), real evictions (gpu.uvm.evictions:
//     the tools interface of drivers 565-595 emits none), and per GPU (a
//     resource with hw.id and host.name, all processes together, since a
//     batch mixes them) gpu.uvm.fault.batches, gpu.uvm.fault.batch.entries
//     {fetched, duplicate, invalid_prefetch}, gpu.uvm.root_chunk.evictions
//     and the gpu.uvm.fault.service.duration histogram (one servicing pass
//     of the fault buffer: batches until it is empty). tools alone gives
//     gpu.uvm.fatal_faults, gpu.uvm.remote_mapped and
//     gpu.uvm.read_duplicated (no fentry hook yet), and its driver queue
//     drops. fentry's losses are on the host resource: ring_full, no_owner
//     (memory of no process, as in multi-process sharing mode),
//     decode_error.
//   - fentry times are CLOCK_MONOTONIC; they are moved to the driver's
//     CLOCK_MONOTONIC_RAW (the tools events' clock, which accounting and
//     fault samples use) with the two clocks' difference measured again
//     each second of record time.
//   - fentry attribution: a record names the process owning the VA space
//     (the task using its mm, else the mm's owner); records of processes
//     not tracked are filtered in the kernel, and ignored if they arrive
//     after Untrack (an untracked process is gone at once, with no reader
//     to drain: its last records in the ring may be lost).
//   - Finish is the end: tracking stops, each tools reader reads its
//     tracker once more (after flushing the driver's held-back events)
//     and closes it, the fentry programs are detached and their ring read
//     to its end, and one last Scrape reports everything, every process
//     one last time; the fault samples those reads took go to Logs before
//     it closes. The receiver hands those metrics on in its final
//     emission. A reader in its wait comes back within poll_interval;
//     Finish's context bounds the whole.
//   - Track retries a process that has no UVM VA space yet
//     (uvmtools.ErrNotCUDA) on its own, with exponential backoff, a
//     bounded number of times (WithRetry); other errors are returned and
//     logged once per kind.
package uvm

//go:generate go tool mdatagen metadata.yaml
