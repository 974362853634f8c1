// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpu_ext_ops.c - the struct_ops types gpu_mem_ops and gpu_sched_ops.
 *
 * A policy is a BPF struct_ops map of one of these types. The verifier lets
 * its programs read their context (a module-owned copy) and call the kfuncs
 * of gpu_ext_kfuncs.c, and refuses every write through a pointer: a policy
 * can only advise. One policy per type is attached at a time; the pointer
 * that entry points read under RCU is swapped with cmpxchg, so a second
 * attach fails with -EEXIST instead of silently replacing the first.
 */
#include <linux/bpf.h>
#include <linux/bpf_verifier.h>
#include <linux/btf.h>
#include <linux/ctype.h>
#include <linux/module.h>
#include <linux/string.h>

#include "gpu_ext_internal.h"

struct gpu_mem_ops __rcu *gpu_ext_mem_ops;
struct gpu_sched_ops __rcu *gpu_ext_sched_ops;

/* --- verifier --------------------------------------------------------- */

static const struct bpf_func_proto *gpu_ext_get_func_proto(enum bpf_func_id func_id,
							   const struct bpf_prog *prog)
{
	return bpf_base_func_proto(func_id, prog);
}

static bool gpu_ext_is_valid_access(int off, int size, enum bpf_access_type type,
				    const struct bpf_prog *prog,
				    struct bpf_insn_access_aux *info)
{
	return bpf_tracing_btf_ctx_access(off, size, type, prog, info);
}

/* Called by the verifier for every write through a BTF pointer: none is
 * allowed, neither to the context copy nor to anything reachable. */
static int gpu_ext_btf_struct_access(struct bpf_verifier_log *log,
				     const struct bpf_reg_state *reg, int off, int size)
{
	bpf_log(log, "gpu_ext: policies cannot write kernel memory; use the gpu_ext kfuncs\n");
	return -EACCES;
}

static const struct bpf_verifier_ops gpu_ext_verifier_ops = {
	.get_func_proto = gpu_ext_get_func_proto,
	.is_valid_access = gpu_ext_is_valid_access,
	.btf_struct_access = gpu_ext_btf_struct_access,
};

/* --- shared pieces ---------------------------------------------------- */

static int gpu_ext_ops_init(struct btf *btf)
{
	return 0;
}

/* A policy name: 1..15 printable characters without spaces, NUL-terminated,
 * because it is printed in /sys/kernel/gpu_ext/ and in logs. */
static int gpu_ext_copy_name(char *dst, const char *src)
{
	size_t len = strnlen(src, GPU_EXT_NAME_LEN);
	size_t i;

	if (len == 0 || len == GPU_EXT_NAME_LEN)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (!isgraph(src[i]))
			return -EINVAL;
	memset(dst, 0, GPU_EXT_NAME_LEN);
	memcpy(dst, src, len);
	return 1; /* handled: the kernel copies nothing more for this member */
}

/* Entry points run callbacks in atomic context: no sleepable programs. */
/* init_member for both types: copies (and checks) the name member found
 * at name_off; other members are the kernel's business. */
static int gpu_ext_init_name(const struct btf_type *t, const struct btf_member *member,
			     void *kdata, const void *udata, size_t name_off)
{
	if (__btf_member_bit_offset(t, member) / 8 != name_off)
		return 0;
	return gpu_ext_copy_name((char *)kdata + name_off, (const char *)udata + name_off);
}

static int gpu_ext_check_member(const struct btf_type *t, const struct btf_member *member,
				const struct bpf_prog *prog)
{
	return prog->sleepable ? -EINVAL : 0;
}

static int gpu_ext_validate(void *kdata)
{
	return 0; /* every callback is optional */
}

/* Attach: only when nothing is attached. */
static int gpu_ext_attach(void __rcu **slot, void *kdata)
{
	if (cmpxchg((void **)slot, NULL, kdata) != NULL)
		return -EEXIST;
	return 0;
}

/* Detach: only what is attached; wait until no entry point still runs it. */
static void gpu_ext_detach(void __rcu **slot, void *kdata)
{
	if (cmpxchg((void **)slot, kdata, NULL) == kdata)
		synchronize_rcu();
}

/* Replace (bpf_link update): only the policy the link holds. */
static int gpu_ext_replace(void __rcu **slot, void *kdata, void *old)
{
	if (cmpxchg((void **)slot, old, kdata) != old)
		return -ENOENT;
	synchronize_rcu();
	return 0;
}

/* --- gpu_mem_ops ------------------------------------------------------ */

static int gpu_mem_init_member(const struct btf_type *t, const struct btf_member *member,
			       void *kdata, const void *udata)
{
	return gpu_ext_init_name(t, member, kdata, udata, offsetof(struct gpu_mem_ops, name));
}

static int gpu_mem_reg(void *kdata, struct bpf_link *link)
{
	return gpu_ext_attach((void __rcu **)&gpu_ext_mem_ops, kdata);
}

static void gpu_mem_unreg(void *kdata, struct bpf_link *link)
{
	gpu_ext_detach((void __rcu **)&gpu_ext_mem_ops, kdata);
}

static int gpu_mem_update(void *kdata, void *old_kdata, struct bpf_link *link)
{
	return gpu_ext_replace((void __rcu **)&gpu_ext_mem_ops, kdata, old_kdata);
}

/* CFI stubs: the types of the callbacks, never called. */
static int gpu_mem_stub(struct gpuext_mem_ctx *ctx) { return 0; }
static int gpu_prefetch_stub(struct gpuext_prefetch_ctx *ctx) { return 0; }

static struct gpu_mem_ops gpu_mem_cfi_stubs = {
	.block_activate = gpu_mem_stub,
	.block_access = gpu_mem_stub,
	.evict_prepare = gpu_mem_stub,
	.page_prefetch = gpu_prefetch_stub,
	.page_prefetch_iter = gpu_prefetch_stub,
};

static struct bpf_struct_ops gpu_mem_bpf_ops = {
	.verifier_ops = &gpu_ext_verifier_ops,
	.init = gpu_ext_ops_init,
	.check_member = gpu_ext_check_member,
	.init_member = gpu_mem_init_member,
	.reg = gpu_mem_reg,
	.unreg = gpu_mem_unreg,
	.update = gpu_mem_update,
	.validate = gpu_ext_validate,
	.cfi_stubs = &gpu_mem_cfi_stubs,
	.name = "gpu_mem_ops",
	.owner = THIS_MODULE,
};

/* --- gpu_sched_ops ---------------------------------------------------- */

static int gpu_sched_init_member(const struct btf_type *t, const struct btf_member *member,
				 void *kdata, const void *udata)
{
	return gpu_ext_init_name(t, member, kdata, udata, offsetof(struct gpu_sched_ops, name));
}

static int gpu_sched_reg(void *kdata, struct bpf_link *link)
{
	return gpu_ext_attach((void __rcu **)&gpu_ext_sched_ops, kdata);
}

static void gpu_sched_unreg(void *kdata, struct bpf_link *link)
{
	gpu_ext_detach((void __rcu **)&gpu_ext_sched_ops, kdata);
}

static int gpu_sched_update(void *kdata, void *old_kdata, struct bpf_link *link)
{
	return gpu_ext_replace((void __rcu **)&gpu_ext_sched_ops, kdata, old_kdata);
}

static int gpu_sched_stub(struct gpuext_sched_ctx *ctx) { return 0; }

static struct gpu_sched_ops gpu_sched_cfi_stubs = {
	.task_init = gpu_sched_stub,
	.task_bind = gpu_sched_stub,
	.task_destroy = gpu_sched_stub,
};

static struct bpf_struct_ops gpu_sched_bpf_ops = {
	.verifier_ops = &gpu_ext_verifier_ops,
	.init = gpu_ext_ops_init,
	.check_member = gpu_ext_check_member,
	.init_member = gpu_sched_init_member,
	.reg = gpu_sched_reg,
	.unreg = gpu_sched_unreg,
	.update = gpu_sched_update,
	.validate = gpu_ext_validate,
	.cfi_stubs = &gpu_sched_cfi_stubs,
	.name = "gpu_sched_ops",
	.owner = THIS_MODULE,
};

int gpu_ext_ops_register(void)
{
	int err;

	err = register_bpf_struct_ops(&gpu_mem_bpf_ops, gpu_mem_ops);
	if (err)
		return err;
	return register_bpf_struct_ops(&gpu_sched_bpf_ops, gpu_sched_ops);
}

/* --- names for sysfs -------------------------------------------------- */

void gpu_ext_mem_policy_name(char name[GPU_EXT_NAME_LEN])
{
	struct gpu_mem_ops *ops;

	rcu_read_lock();
	ops = rcu_dereference(gpu_ext_mem_ops);
	strscpy(name, ops ? ops->name : "-", GPU_EXT_NAME_LEN);
	rcu_read_unlock();
}

void gpu_ext_sched_policy_name(char name[GPU_EXT_NAME_LEN])
{
	struct gpu_sched_ops *ops;

	rcu_read_lock();
	ops = rcu_dereference(gpu_ext_sched_ops);
	strscpy(name, ops ? ops->name : "-", GPU_EXT_NAME_LEN);
	rcu_read_unlock();
}
