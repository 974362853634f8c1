// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * uvm.bpf.c - what NVIDIA's unified-memory driver (nvidia_uvm) does, from
 * fentry/fexit programs on its functions: GPU and CPU faults, migrations,
 * fault batches and their replays, prefetch decisions, evictions, thrashing.
 *
 * The driver's own event bus carries most of it: every fault and every
 * migrated range goes through uvm_perf_event_notify(), which is where the
 * UVM tools interface gets its events too, so one program there sees what
 * the tools backend sees, for every process, without a tools session per
 * process. The other hooks are the driver's tools recorders (called whether
 * or not a tools session listens) and the servicing functions themselves.
 *
 * Types: the module's structures are declared below with only the members
 * read, under preserve_access_index, so every access is a CO-RE relocation
 * resolved against the running module's BTF (/sys/kernel/btf/nvidia_uvm);
 * members move between driver versions and nothing here hard-codes an
 * offset. Many driver types are typedefs of anonymous structs; they are
 * declared the same way, and clang records the typedef, which CO-RE finds
 * by name. Driver enums are translated into the stable values of
 * gpuext_abi.h with CO-RE enum relocations.
 *
 * Attribution: a VA space belongs to the process whose mm it registered
 * (va_space->va_space_mm.mm). When the current task uses that mm (CPU
 * faults, ioctls) its thread group is the owner; otherwise (the fault
 * servicing thread, evictions) the mm's owner task is, where the kernel
 * keeps one (CONFIG_MEMCG). Records without an owner carry
 * GPUEXT_UVM_F_NO_OWNER.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "include/gpuext_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Keep the record types in BTF so Go tests can check their layout. */
const struct gpuext_uvm_event *unused_uvm_event __attribute__((unused));
const enum gpuext_uvm_type *unused_uvm_type __attribute__((unused));
const enum gpuext_uvm_cause *unused_uvm_cause __attribute__((unused));
const enum gpuext_uvm_access *unused_uvm_access __attribute__((unused));
const enum gpuext_drop *unused_drop __attribute__((unused));
const enum gpuext_kind *unused_kind __attribute__((unused));

/* ---- kernel and driver types: only what is read ---- */

typedef unsigned char NvU8;
typedef unsigned short NvU16;
typedef short NvS16;
typedef unsigned int NvU32;
typedef unsigned long long NvU64;
typedef NvU32 NV_STATUS;
typedef _Bool bool;

struct task_struct {
	int tgid;
	struct mm_struct *mm;
} __attribute__((preserve_access_index));

struct mm_struct {
	struct task_struct *owner; /* CONFIG_MEMCG only: checked before use */
} __attribute__((preserve_access_index));

struct nv_uuid {
	NvU8 uuid[16];
} __attribute__((preserve_access_index));
typedef struct nv_uuid NvProcessorUuid;

typedef struct {
	NvU32 val;
} __attribute__((preserve_access_index)) uvm_processor_id_t;
typedef uvm_processor_id_t uvm_gpu_id_t;

typedef struct {
	unsigned long bitmap[8];
} __attribute__((preserve_access_index)) uvm_page_mask_t;

typedef struct {
	unsigned long bitmap[5];
} __attribute__((preserve_access_index)) uvm_processor_mask_t;

typedef struct uvm_va_space_struct uvm_va_space_t;
typedef struct uvm_va_block_struct uvm_va_block_t;
typedef struct uvm_gpu_struct uvm_gpu_t;
typedef struct uvm_parent_gpu_struct uvm_parent_gpu_t;

typedef struct {
	struct mm_struct *mm;
} __attribute__((preserve_access_index)) uvm_va_space_mm_t;

struct uvm_gpu_va_space_struct {
	uvm_gpu_t *gpu;
} __attribute__((preserve_access_index));

struct uvm_va_space_struct {
	struct uvm_gpu_va_space_struct *gpu_va_spaces[256];
	uvm_va_space_mm_t va_space_mm;
} __attribute__((preserve_access_index));

struct uvm_va_range_struct {
	uvm_va_space_t *va_space;
} __attribute__((preserve_access_index));

struct uvm_va_range_managed_struct {
	struct uvm_va_range_struct va_range;
} __attribute__((preserve_access_index));

struct uvm_va_block_struct {
	struct uvm_va_range_managed_struct *managed_range;
	NvU64 start;
	NvU64 end;
	struct {
		uvm_va_space_t *va_space;
	} hmm; /* HMM blocks have no managed range */
} __attribute__((preserve_access_index));

/* Drivers before 560 linked a block to its range directly. */
struct uvm_va_block_struct___va_range {
	struct uvm_va_range_struct *va_range;
} __attribute__((preserve_access_index));

struct uvm_fault_service_batch_context_struct {
	NvU32 num_cached_faults;
	NvU32 num_coalesced_faults;
	uvm_va_space_t *fatal_va_space;
	bool has_throttled_faults;
	NvU32 num_invalid_prefetch_faults;
	NvU32 num_duplicate_faults;
	NvU32 num_replays;
	NvU32 batch_id;
} __attribute__((preserve_access_index));
typedef struct uvm_fault_service_batch_context_struct uvm_fault_service_batch_context_t;

struct uvm_replayable_fault_buffer_struct {
	uvm_fault_service_batch_context_t batch_service_context;
} __attribute__((preserve_access_index));

typedef struct {
	struct uvm_replayable_fault_buffer_struct replayable;
} __attribute__((preserve_access_index)) uvm_fault_buffer_t;

struct uvm_parent_gpu_struct {
	NvProcessorUuid uuid;
	uvm_fault_buffer_t fault_buffer;
} __attribute__((preserve_access_index));

struct uvm_pmm_gpu_struct {
	NvU32 unused; /* only its place in uvm_gpu_t is read */
} __attribute__((preserve_access_index));
typedef struct uvm_pmm_gpu_struct uvm_pmm_gpu_t;

struct uvm_gpu_struct {
	uvm_parent_gpu_t *parent;
	uvm_gpu_id_t id;
	uvm_pmm_gpu_t pmm;
} __attribute__((preserve_access_index));

typedef enum {
	UVM_FAULT_TYPE_INVALID_PDE = 0,
	UVM_FAULT_TYPE_INVALID_PTE,
	UVM_FAULT_TYPE_ATOMIC,
	UVM_FAULT_TYPE_WRITE,
	UVM_FAULT_TYPE_READ,
	UVM_FAULT_TYPE_PDE_SIZE,
	UVM_FAULT_TYPE_VA_LIMIT_VIOLATION,
	UVM_FAULT_TYPE_UNBOUND_INST_BLOCK,
	UVM_FAULT_TYPE_PRIV_VIOLATION,
	UVM_FAULT_TYPE_PITCH_MASK_VIOLATION,
	UVM_FAULT_TYPE_WORK_CREATION,
	UVM_FAULT_TYPE_UNSUPPORTED_APERTURE,
	UVM_FAULT_TYPE_COMPRESSION_FAILURE,
	UVM_FAULT_TYPE_UNSUPPORTED_KIND,
	UVM_FAULT_TYPE_REGION_VIOLATION,
	UVM_FAULT_TYPE_POISONED,
	UVM_FAULT_TYPE_CC_VIOLATION,
} uvm_fault_type_t;

typedef enum {
	UVM_FAULT_ACCESS_TYPE_PREFETCH = 0,
	UVM_FAULT_ACCESS_TYPE_READ,
	UVM_FAULT_ACCESS_TYPE_WRITE,
	UVM_FAULT_ACCESS_TYPE_ATOMIC_WEAK,
	UVM_FAULT_ACCESS_TYPE_ATOMIC_STRONG,
} uvm_fault_access_type_t;

typedef enum {
	UVM_MAKE_RESIDENT_CAUSE_REPLAYABLE_FAULT = 0,
	UVM_MAKE_RESIDENT_CAUSE_NON_REPLAYABLE_FAULT,
	UVM_MAKE_RESIDENT_CAUSE_ACCESS_COUNTER,
	UVM_MAKE_RESIDENT_CAUSE_PREFETCH,
	UVM_MAKE_RESIDENT_CAUSE_EVICTION,
	UVM_MAKE_RESIDENT_CAUSE_API_TOOLS,
	UVM_MAKE_RESIDENT_CAUSE_API_MIGRATE,
	UVM_MAKE_RESIDENT_CAUSE_API_SET_RANGE_GROUP,
	UVM_MAKE_RESIDENT_CAUSE_API_HINT,
} uvm_make_resident_cause_t;

typedef enum {
	UVM_PERF_EVENT_FAULT = 6,
	UVM_PERF_EVENT_MIGRATION = 7,
} uvm_perf_event_t;

typedef enum {
	FAULT_SERVICE_MODE_REGULAR = 0,
	FAULT_SERVICE_MODE_CANCEL = 1,
} fault_service_mode_t;

typedef enum {
	PMM_CONTEXT_DEFAULT = 0,
	PMM_CONTEXT_PMA_EVICTION = 1,
} uvm_pmm_context_t;

struct uvm_fault_buffer_entry_struct {
	NvU64 fault_address;
	NvU64 timestamp; /* the GPU's */
	uvm_fault_type_t fault_type : 6;
	uvm_fault_access_type_t fault_access_type : 4;
	uvm_gpu_t *gpu;
	NvU16 num_instances;
} __attribute__((preserve_access_index));
typedef struct uvm_fault_buffer_entry_struct uvm_fault_buffer_entry_t;

typedef struct {
	uvm_va_space_t *va_space;
} __attribute__((preserve_access_index)) uvm_perf_va_space_events_t;

typedef union {
	struct {
		uvm_va_block_t *block;
		uvm_processor_id_t proc_id;
		union {
			struct {
				uvm_fault_buffer_entry_t *buffer_entry;
				NvU32 batch_id;
				bool is_duplicate;
			} gpu;
			struct {
				NvU64 fault_va;
				NvU32 cpu_num;
				bool is_write;
				NvU64 pc;
			} cpu;
		};
	} fault;
	struct {
		uvm_va_block_t *block;
		uvm_processor_id_t dst;
		uvm_processor_id_t src;
		NvS16 dst_nid;
		NvS16 src_nid;
		NvU64 address;
		NvU64 bytes;
		uvm_make_resident_cause_t cause;
	} migration;
} __attribute__((preserve_access_index)) uvm_perf_event_data_t;

typedef struct {
	uvm_page_mask_t prefetch_pages_mask;
	uvm_processor_id_t residency;
} __attribute__((preserve_access_index)) uvm_perf_prefetch_hint_t;

struct uvm_gpu_chunk_struct {
	NvU64 address;
	struct {
		unsigned long log2_size : 5;
	};
} __attribute__((preserve_access_index));

struct uvm_gpu_root_chunk_struct {
	struct uvm_gpu_chunk_struct chunk;
} __attribute__((preserve_access_index));
typedef struct uvm_gpu_root_chunk_struct uvm_gpu_root_chunk_t;

/* ---- maps ---- */

/* Records, to the collector. Sized from userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} uvm_events SEC(".maps");

/* Records lost, by enum gpuext_drop. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GPUEXT_DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} uvm_drops SEC(".maps");

/*
 * Processes the collector traces (pid -> 1), when filter_pids is set:
 * records of other processes are not sent. Records of no process (fault
 * batches, replays, root chunk evictions) and of an unknown owner always are.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} uvm_pids SEC(".maps");

volatile const bool filter_pids = 0;

/*
 * Entry times of the timed functions, keyed by the object each one works
 * on (a parent GPU, a batch context, a root chunk): these functions run in
 * kernel threads that may sleep and move between CPUs, and none of them
 * runs twice at once on the same object (the driver's locks say so).
 */
enum timed_hook {
	TIMED_SERVICE = 1,
	TIMED_BATCH = 2,
	TIMED_ROOT_EVICTION = 3,
};

struct timed_key {
	__u64 obj;
	__u32 hook;
	__u32 _pad;
};

struct timed_val {
	__u64 start_ns;
	__u64 aux;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct timed_key);
	__type(value, struct timed_val);
} uvm_timed SEC(".maps");

/* ---- helpers ---- */

static __always_inline void count_drop(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&uvm_drops, &reason);

	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline bool wanted(__u32 pid)
{
	return !filter_pids || pid == 0 || bpf_map_lookup_elem(&uvm_pids, &pid);
}

/* reserve returns a zeroed record of type t at now, or NULL (counted). */
static __always_inline struct gpuext_uvm_event *reserve(__u8 type, __u64 now)
{
	struct gpuext_uvm_event *ev = bpf_ringbuf_reserve(&uvm_events, sizeof(*ev), 0);

	if (!ev) {
		count_drop(GPUEXT_DROP_RING_FULL);
		return NULL;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = GPUEXT_KIND_UVM;
	ev->type = type;
	ev->start_ns = now;
	ev->end_ns = now;
	ev->src_nid = -1;
	ev->dst_nid = -1;
	return ev;
}

/* owner returns the thread group owning va_space, or 0 with NO_OWNER set. */
static __always_inline __u32 owner(const uvm_va_space_t *va_space, __u8 *flags)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct mm_struct *mm = NULL;

	if (va_space && bpf_core_field_exists(va_space->va_space_mm))
		mm = BPF_CORE_READ(va_space, va_space_mm.mm);
	if (mm) {
		if (BPF_CORE_READ(task, mm) == mm)
			return bpf_get_current_pid_tgid() >> 32;
		if (bpf_core_field_exists(mm->owner)) {
			struct task_struct *o = BPF_CORE_READ(mm, owner);

			if (o)
				return BPF_CORE_READ(o, tgid);
		}
	}
	*flags |= GPUEXT_UVM_F_NO_OWNER;
	return 0;
}

/* block_va_space is uvm_va_block_get_va_space(), for managed and HMM blocks. */
static __always_inline const uvm_va_space_t *block_va_space(const uvm_va_block_t *block)
{
	if (!block)
		return NULL;
	if (bpf_core_field_exists(block->managed_range)) {
		struct uvm_va_range_managed_struct *r = BPF_CORE_READ(block, managed_range);

		if (r)
			return BPF_CORE_READ(r, va_range.va_space);
	} else {
		const struct uvm_va_block_struct___va_range *old = (const void *)block;

		if (bpf_core_field_exists(old->va_range)) {
			struct uvm_va_range_struct *r = BPF_CORE_READ(old, va_range);

			if (r)
				return BPF_CORE_READ(r, va_space);
		}
	}
	if (bpf_core_field_exists(block->hmm))
		return BPF_CORE_READ(block, hmm.va_space);
	return NULL;
}

static __always_inline void parent_uuid(__u8 *dst, const uvm_parent_gpu_t *parent)
{
	if (parent)
		bpf_core_read(dst, 16, &parent->uuid);
}

/* gpu_uuid stores the UUID of gpu's physical GPU (its parent: MIG
 * instances share it, as hw.id does). */
static __always_inline void gpu_uuid(__u8 *dst, const uvm_gpu_t *gpu)
{
	if (gpu)
		parent_uuid(dst, BPF_CORE_READ(gpu, parent));
}

/* va_space_gpu_uuid stores the UUID of processor id's GPU as va_space
 * registered it (nothing for the CPU or a GPU it has not registered). */
static __always_inline void va_space_gpu_uuid(__u8 *dst, const uvm_va_space_t *va_space, __u32 id)
{
	__u32 n = bpf_core_field_size(va_space->gpu_va_spaces) / sizeof(void *);
	struct uvm_gpu_va_space_struct *gvs = NULL;
	const char *slot;

	if (!va_space || id == GPUEXT_UVM_CPU || id > n)
		return;
	slot = (const char *)va_space + bpf_core_field_offset(va_space->gpu_va_spaces);
	if (bpf_probe_read_kernel(&gvs, sizeof(gvs), slot + (id - 1) * sizeof(void *)) || !gvs)
		return;
	gpu_uuid(dst, BPF_CORE_READ(gvs, gpu));
}

#define MAP_ENUM(type, value, out)                                                   \
	if (bpf_core_enum_value_exists(type, value) && raw == bpf_core_enum_value(type, value)) \
		return out

static __always_inline __u8 cause_of(__u32 raw)
{
	MAP_ENUM(uvm_make_resident_cause_t, UVM_MAKE_RESIDENT_CAUSE_REPLAYABLE_FAULT, GPUEXT_UVM_CAUSE_REPLAYABLE_FAULT);
	MAP_ENUM(uvm_make_resident_cause_t, UVM_MAKE_RESIDENT_CAUSE_NON_REPLAYABLE_FAULT, GPUEXT_UVM_CAUSE_NON_REPLAYABLE_FAULT);
	MAP_ENUM(uvm_make_resident_cause_t, UVM_MAKE_RESIDENT_CAUSE_ACCESS_COUNTER, GPUEXT_UVM_CAUSE_ACCESS_COUNTER);
	MAP_ENUM(uvm_make_resident_cause_t, UVM_MAKE_RESIDENT_CAUSE_PREFETCH, GPUEXT_UVM_CAUSE_PREFETCH);
	MAP_ENUM(uvm_make_resident_cause_t, UVM_MAKE_RESIDENT_CAUSE_EVICTION, GPUEXT_UVM_CAUSE_EVICTION);
	MAP_ENUM(uvm_make_resident_cause_t, UVM_MAKE_RESIDENT_CAUSE_API_TOOLS, GPUEXT_UVM_CAUSE_API_TOOLS);
	MAP_ENUM(uvm_make_resident_cause_t, UVM_MAKE_RESIDENT_CAUSE_API_MIGRATE, GPUEXT_UVM_CAUSE_API_MIGRATE);
	MAP_ENUM(uvm_make_resident_cause_t, UVM_MAKE_RESIDENT_CAUSE_API_SET_RANGE_GROUP, GPUEXT_UVM_CAUSE_API_SET_RANGE_GROUP);
	MAP_ENUM(uvm_make_resident_cause_t, UVM_MAKE_RESIDENT_CAUSE_API_HINT, GPUEXT_UVM_CAUSE_API_HINT);
	return GPUEXT_UVM_CAUSE_UNKNOWN;
}

static __always_inline __u8 access_of(__u32 raw)
{
	MAP_ENUM(uvm_fault_access_type_t, UVM_FAULT_ACCESS_TYPE_READ, GPUEXT_UVM_ACCESS_READ);
	MAP_ENUM(uvm_fault_access_type_t, UVM_FAULT_ACCESS_TYPE_WRITE, GPUEXT_UVM_ACCESS_WRITE);
	MAP_ENUM(uvm_fault_access_type_t, UVM_FAULT_ACCESS_TYPE_ATOMIC_STRONG, GPUEXT_UVM_ACCESS_ATOMIC);
	MAP_ENUM(uvm_fault_access_type_t, UVM_FAULT_ACCESS_TYPE_ATOMIC_WEAK, GPUEXT_UVM_ACCESS_ATOMIC_WEAK);
	MAP_ENUM(uvm_fault_access_type_t, UVM_FAULT_ACCESS_TYPE_PREFETCH, GPUEXT_UVM_ACCESS_PREFETCH);
	return GPUEXT_UVM_ACCESS_UNKNOWN;
}

/* fault_type_of translates as the driver's tools code does
 * (g_hal_to_tools_fault_type_table); read faults have no tools type. */
static __always_inline __u8 fault_type_of(__u32 raw)
{
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_INVALID_PDE, 1);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_INVALID_PTE, 2);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_WRITE, 3);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_ATOMIC, 4);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_PDE_SIZE, 5);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_VA_LIMIT_VIOLATION, 6);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_UNBOUND_INST_BLOCK, 7);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_PRIV_VIOLATION, 8);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_PITCH_MASK_VIOLATION, 9);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_WORK_CREATION, 10);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_UNSUPPORTED_APERTURE, 11);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_COMPRESSION_FAILURE, 12);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_UNSUPPORTED_KIND, 13);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_REGION_VIOLATION, 14);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_POISONED, 15);
	MAP_ENUM(uvm_fault_type_t, UVM_FAULT_TYPE_CC_VIOLATION, 16);
	return 0;
}

/* popcount64 without a popcount instruction (BPF has none). */
static __always_inline __u32 popcount64(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (x * 0x0101010101010101ULL) >> 56;
}

static __always_inline void timed_start(__u32 hook, const void *obj, __u64 aux)
{
	struct timed_key k = { .obj = (__u64)obj, .hook = hook };
	struct timed_val v = { .start_ns = bpf_ktime_get_ns(), .aux = aux };

	if (bpf_map_update_elem(&uvm_timed, &k, &v, BPF_ANY))
		count_drop(GPUEXT_DROP_INFLIGHT_FULL);
}

/* timed_end fills ev's start from the entry (NO_START if none was seen) and
 * returns the entry's aux. */
static __always_inline __u64 timed_end(__u32 hook, const void *obj, struct gpuext_uvm_event *ev)
{
	struct timed_key k = { .obj = (__u64)obj, .hook = hook };
	struct timed_val *v = bpf_map_lookup_elem(&uvm_timed, &k);
	__u64 aux = 0;

	if (v && v->start_ns <= ev->end_ns) {
		ev->start_ns = v->start_ns;
		aux = v->aux;
	} else {
		ev->flags |= GPUEXT_UVM_F_NO_START;
		count_drop(GPUEXT_DROP_UNMATCHED);
	}
	if (v)
		bpf_map_delete_elem(&uvm_timed, &k);
	return aux;
}

/* ---- the driver's event bus: faults and migrations ---- */

static __always_inline void gpu_fault(const uvm_va_space_t *va_space, const uvm_perf_event_data_t *data, __u64 now)
{
	const uvm_fault_buffer_entry_t *entry = BPF_CORE_READ(data, fault.gpu.buffer_entry);
	struct gpuext_uvm_event *ev;
	__u8 flags = 0;
	__u32 pid = owner(va_space, &flags);

	if (!entry || !wanted(pid))
		return;
	ev = reserve(GPUEXT_UVM_GPU_FAULT, now);
	if (!ev)
		return;
	ev->pid = pid;
	ev->flags = flags;
	if (BPF_CORE_READ(data, fault.gpu.is_duplicate))
		ev->flags |= GPUEXT_UVM_F_DUPLICATE;
	ev->batch = BPF_CORE_READ(data, fault.gpu.batch_id);
	ev->src = BPF_CORE_READ(data, fault.proc_id.val);
	ev->address = BPF_CORE_READ(entry, fault_address);
	ev->value = BPF_CORE_READ(entry, timestamp);
	ev->count = BPF_CORE_READ(entry, num_instances);
	ev->access = access_of(BPF_CORE_READ_BITFIELD_PROBED(entry, fault_access_type));
	ev->fault_type = fault_type_of(BPF_CORE_READ_BITFIELD_PROBED(entry, fault_type));
	gpu_uuid(ev->gpu, BPF_CORE_READ(entry, gpu));
	bpf_ringbuf_submit(ev, 0);
}

static __always_inline void cpu_fault(const uvm_perf_event_data_t *data, __u64 now)
{
	/* CPU faults are serviced by the faulting thread itself. */
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gpuext_uvm_event *ev;

	if (!wanted(pid_tgid >> 32))
		return;
	ev = reserve(GPUEXT_UVM_CPU_FAULT, now);
	if (!ev)
		return;
	ev->pid = pid_tgid >> 32;
	ev->tid = (__u32)pid_tgid;
	ev->address = BPF_CORE_READ(data, fault.cpu.fault_va);
	ev->value = BPF_CORE_READ(data, fault.cpu.pc);
	ev->aux[0] = BPF_CORE_READ(data, fault.cpu.cpu_num);
	ev->access = BPF_CORE_READ(data, fault.cpu.is_write) ? GPUEXT_UVM_ACCESS_WRITE : GPUEXT_UVM_ACCESS_READ;
	bpf_ringbuf_submit(ev, 0);
}

static __always_inline void migration(const uvm_va_space_t *va_space, const uvm_perf_event_data_t *data, __u64 now)
{
	struct gpuext_uvm_event *ev;
	__u8 flags = 0;
	__u32 pid = owner(va_space, &flags);
	__u32 dst, src;

	if (!wanted(pid))
		return;
	ev = reserve(GPUEXT_UVM_MIGRATION, now);
	if (!ev)
		return;
	dst = BPF_CORE_READ(data, migration.dst.val);
	src = BPF_CORE_READ(data, migration.src.val);
	ev->pid = pid;
	ev->flags = flags;
	ev->dst = dst;
	ev->src = src;
	ev->address = BPF_CORE_READ(data, migration.address);
	ev->bytes = BPF_CORE_READ(data, migration.bytes);
	ev->cause = cause_of(BPF_CORE_READ(data, migration.cause));
	/* The driver sets the NUMA nodes for CPU-to-CPU copies only. */
	if (dst == GPUEXT_UVM_CPU && src == GPUEXT_UVM_CPU) {
		ev->dst_nid = BPF_CORE_READ(data, migration.dst_nid);
		ev->src_nid = BPF_CORE_READ(data, migration.src_nid);
	}
	/* The GPU end the collector accounts it on: the destination, or the
	 * source of a GPU-to-CPU copy. */
	va_space_gpu_uuid(ev->gpu, va_space, dst != GPUEXT_UVM_CPU ? dst : src);
	bpf_ringbuf_submit(ev, 0);
}

SEC("fentry/uvm_perf_event_notify")
int BPF_PROG(uvm_perf_event, const uvm_perf_va_space_events_t *events, uvm_perf_event_t event_id,
	     const uvm_perf_event_data_t *data)
{
	__u64 now = bpf_ktime_get_ns();
	const uvm_va_space_t *va_space;

	if (event_id != bpf_core_enum_value(uvm_perf_event_t, UVM_PERF_EVENT_FAULT) &&
	    event_id != bpf_core_enum_value(uvm_perf_event_t, UVM_PERF_EVENT_MIGRATION))
		return 0;
	va_space = BPF_CORE_READ(events, va_space);
	if (event_id == bpf_core_enum_value(uvm_perf_event_t, UVM_PERF_EVENT_MIGRATION)) {
		migration(va_space, data, now);
	} else if (BPF_CORE_READ(data, fault.proc_id.val) == GPUEXT_UVM_CPU) {
		cpu_fault(data, now);
	} else {
		gpu_fault(va_space, data, now);
	}
	return 0;
}

/* ---- the tools recorders ---- */

/* A GPU fault batch ends with a replay pushed to the GPU. The driver calls
 * this whether or not a tools session listens (and returns at once if
 * none does). */
SEC("fentry/uvm_tools_broadcast_replay")
int BPF_PROG(uvm_replay, const uvm_gpu_t *gpu, void *push, NvU32 batch_id)
{
	struct gpuext_uvm_event *ev = reserve(GPUEXT_UVM_REPLAY, bpf_ktime_get_ns());

	if (!ev)
		return 0;
	ev->batch = batch_id;
	ev->src = BPF_CORE_READ(gpu, id.val);
	gpu_uuid(ev->gpu, gpu);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("fentry/uvm_tools_record_thrashing")
int BPF_PROG(uvm_thrashing, const uvm_va_space_t *va_space, NvU64 address, NvU64 region_size,
	     const uvm_processor_mask_t *processors)
{
	struct gpuext_uvm_event *ev;
	__u8 flags = 0;
	__u32 pid = owner(va_space, &flags);

	if (!wanted(pid))
		return 0;
	ev = reserve(GPUEXT_UVM_THRASHING, bpf_ktime_get_ns());
	if (!ev)
		return 0;
	ev->pid = pid;
	ev->flags = flags;
	ev->address = address;
	ev->bytes = region_size;
	ev->value = BPF_CORE_READ(processors, bitmap[0]);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

/* processor is a uvm_processor_id_t passed by value: its 32 bits in a register. */
SEC("fentry/uvm_tools_record_throttling_start")
int BPF_PROG(uvm_throttling, const uvm_va_space_t *va_space, NvU64 address, NvU32 processor)
{
	struct gpuext_uvm_event *ev;
	__u8 flags = 0;
	__u32 pid = owner(va_space, &flags);

	if (!wanted(pid))
		return 0;
	ev = reserve(GPUEXT_UVM_THROTTLING, bpf_ktime_get_ns());
	if (!ev)
		return 0;
	ev->pid = pid;
	ev->flags = flags;
	ev->address = address;
	ev->src = processor;
	va_space_gpu_uuid(ev->gpu, va_space, processor);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

/* ---- prefetch and eviction ---- */

/* new_residency and faulted_region are structs of 4 bytes passed by value. */
SEC("fexit/uvm_perf_prefetch_get_hint_va_block")
int BPF_PROG(uvm_prefetch_hint, const uvm_va_block_t *block, void *block_context, NvU32 new_residency,
	     const void *faulted_pages, NvU32 faulted_region, void *bitmap_tree,
	     const uvm_perf_prefetch_hint_t *hint)
{
	const uvm_va_space_t *va_space;
	uvm_page_mask_t mask;
	struct gpuext_uvm_event *ev;
	__u32 pages = 0, residency;
	__u8 flags = 0;
	__u32 pid;

	if (!hint || bpf_core_read(&mask, sizeof(mask), &hint->prefetch_pages_mask))
		return 0;
	for (int i = 0; i < 8; i++)
		pages += popcount64(mask.bitmap[i]);
	if (pages == 0)
		return 0; /* the common case: no prefetch */
	residency = BPF_CORE_READ(hint, residency.val);
	va_space = block_va_space(block);
	pid = owner(va_space, &flags);
	if (!wanted(pid))
		return 0;
	ev = reserve(GPUEXT_UVM_PREFETCH, bpf_ktime_get_ns());
	if (!ev)
		return 0;
	ev->pid = pid;
	ev->flags = flags;
	ev->dst = residency;
	ev->count = pages;
	ev->bytes = (__u64)pages * 4096; /* page masks count 4 KiB pages on x86-64 */
	ev->address = BPF_CORE_READ(block, start);
	va_space_gpu_uuid(ev->gpu, va_space, residency);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

/* One VA block's chunks evicted from a root chunk of gpu (the per-process
 * part of a root chunk eviction). */
SEC("fexit/uvm_va_block_evict_chunks")
int BPF_PROG(uvm_evict_chunks, const uvm_va_block_t *block, const uvm_gpu_t *gpu, void *root_chunk,
	     void *tracker, NV_STATUS ret)
{
	struct gpuext_uvm_event *ev;
	__u8 flags = 0;
	__u32 pid = owner(block_va_space(block), &flags);

	if (!wanted(pid))
		return 0;
	ev = reserve(GPUEXT_UVM_EVICTION, bpf_ktime_get_ns());
	if (!ev)
		return 0;
	ev->pid = pid;
	ev->flags = flags;
	ev->status = ret;
	ev->address = BPF_CORE_READ(block, start);
	ev->src = BPF_CORE_READ(gpu, id.val);
	ev->dst = GPUEXT_UVM_CPU;
	gpu_uuid(ev->gpu, gpu);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("fentry/evict_root_chunk")
int BPF_PROG(uvm_root_evict_enter, const uvm_pmm_gpu_t *pmm, const uvm_gpu_root_chunk_t *root_chunk)
{
	timed_start(TIMED_ROOT_EVICTION, root_chunk, 0);
	return 0;
}

SEC("fexit/evict_root_chunk")
int BPF_PROG(uvm_root_evict_exit, const uvm_pmm_gpu_t *pmm, const uvm_gpu_root_chunk_t *root_chunk,
	     uvm_pmm_context_t pmm_context, NV_STATUS ret)
{
	struct gpuext_uvm_event *ev = reserve(GPUEXT_UVM_ROOT_EVICTION, bpf_ktime_get_ns());
	const uvm_gpu_t *gpu;

	if (!ev)
		return 0;
	timed_end(TIMED_ROOT_EVICTION, root_chunk, ev);
	ev->status = ret;
	if (pmm_context == bpf_core_enum_value(uvm_pmm_context_t, PMM_CONTEXT_PMA_EVICTION))
		ev->flags |= GPUEXT_UVM_F_PMA;
	ev->address = BPF_CORE_READ(root_chunk, chunk.address);
	ev->bytes = 1ULL << (BPF_CORE_READ_BITFIELD_PROBED(&root_chunk->chunk, log2_size) & 63);
	/* pmm is embedded in its uvm_gpu_t (uvm_pmm_to_gpu()). */
	gpu = (const void *)((const char *)pmm - bpf_core_field_offset(struct uvm_gpu_struct, pmm));
	ev->src = BPF_CORE_READ(gpu, id.val);
	gpu_uuid(ev->gpu, gpu);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

/* ---- fault servicing ---- */

/* One servicing pass of a GPU's replayable fault buffer (the bottom half):
 * batches until the buffer is empty or a throttling limit is reached. */
SEC("fentry/uvm_parent_gpu_service_replayable_faults")
int BPF_PROG(uvm_service_enter, const uvm_parent_gpu_t *parent)
{
	timed_start(TIMED_SERVICE, parent,
		    BPF_CORE_READ(parent, fault_buffer.replayable.batch_service_context.batch_id));
	return 0;
}

SEC("fexit/uvm_parent_gpu_service_replayable_faults")
int BPF_PROG(uvm_service_exit, const uvm_parent_gpu_t *parent)
{
	struct gpuext_uvm_event *ev = reserve(GPUEXT_UVM_FAULT_SERVICE, bpf_ktime_get_ns());
	__u32 first, last;

	if (!ev)
		return 0;
	first = timed_end(TIMED_SERVICE, parent, ev);
	last = BPF_CORE_READ(parent, fault_buffer.replayable.batch_service_context.batch_id);
	ev->batch = last;
	/* Batch ids count up by one per fetched batch. */
	ev->count = (ev->flags & GPUEXT_UVM_F_NO_START) ? 0 : last - first;
	parent_uuid(ev->gpu, parent);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("fentry/service_fault_batch")
int BPF_PROG(uvm_batch_enter, const uvm_parent_gpu_t *parent, fault_service_mode_t mode,
	     const uvm_fault_service_batch_context_t *batch)
{
	timed_start(TIMED_BATCH, batch, 0);
	return 0;
}

SEC("fexit/service_fault_batch")
int BPF_PROG(uvm_batch_exit, const uvm_parent_gpu_t *parent, fault_service_mode_t mode,
	     const uvm_fault_service_batch_context_t *batch, NV_STATUS ret)
{
	struct gpuext_uvm_event *ev = reserve(GPUEXT_UVM_FAULT_BATCH, bpf_ktime_get_ns());

	if (!ev)
		return 0;
	timed_end(TIMED_BATCH, batch, ev);
	ev->status = ret;
	ev->batch = BPF_CORE_READ(batch, batch_id);
	ev->count = BPF_CORE_READ(batch, num_cached_faults);
	ev->aux[0] = BPF_CORE_READ(batch, num_coalesced_faults);
	ev->aux[1] = BPF_CORE_READ(batch, num_duplicate_faults);
	ev->aux[2] = BPF_CORE_READ(batch, num_invalid_prefetch_faults);
	ev->value = BPF_CORE_READ(batch, num_replays);
	if (BPF_CORE_READ(batch, has_throttled_faults))
		ev->flags |= GPUEXT_UVM_F_THROTTLED;
	if (BPF_CORE_READ(batch, fatal_va_space))
		ev->flags |= GPUEXT_UVM_F_FATAL;
	if (mode != bpf_core_enum_value(fault_service_mode_t, FAULT_SERVICE_MODE_REGULAR))
		ev->flags |= GPUEXT_UVM_F_CANCEL;
	parent_uuid(ev->gpu, parent);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}
