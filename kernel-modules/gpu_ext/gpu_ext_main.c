// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpu_ext_main.c - module init/exit and /sys/kernel/gpu_ext/.
 *
 * The module is split by job: gpu_ext_ops.c registers the two struct_ops
 * types (and owns the one-policy-per-ops pointers), gpu_ext_kfuncs.c the
 * kfuncs that record requests, gpu_ext_hooks.c the entry points a driver
 * calls (copy, run, validate, count), gpu_ext_stats.c the per-CPU counters.
 * This file ties them together and publishes what userspace reads: the ABI
 * version, the attached policies' names and the counters, as documented in
 * gpu_ext.h.
 */
#include <linux/module.h>
#include <linux/btf.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>

#include "gpu_ext_internal.h"

/*
 * The ABI version lives in BTF: BTF_TYPE_EMIT below keeps the enum in the
 * module's DWARF, so pahole puts it in the module's .BTF, where the Go loader
 * reads it before attaching anything.
 */
enum gpu_ext_abi {
	GPU_EXT_ABI_VERSION = GPUEXT_KMOD_ABI_VERSION,
};

u32 gpu_ext_abi_version(void)
{
	return GPU_EXT_ABI_VERSION;
}
EXPORT_SYMBOL_GPL(gpu_ext_abi_version);

static struct kobject *gpu_ext_kobj;

static ssize_t abi_version_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", gpu_ext_abi_version());
}

static ssize_t mem_policy_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	char name[GPU_EXT_NAME_LEN];

	gpu_ext_mem_policy_name(name);
	return sysfs_emit(buf, "%s\n", name);
}

static ssize_t sched_policy_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	char name[GPU_EXT_NAME_LEN];

	gpu_ext_sched_policy_name(name);
	return sysfs_emit(buf, "%s\n", name);
}

static ssize_t stats_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return gpu_ext_stats_emit(buf);
}

static struct kobj_attribute abi_version_attr = __ATTR_RO(abi_version);
static struct kobj_attribute mem_policy_attr = __ATTR_RO(mem_policy);
static struct kobj_attribute sched_policy_attr = __ATTR_RO(sched_policy);
static struct kobj_attribute stats_attr = __ATTR_RO(stats);

static struct attribute *gpu_ext_attrs[] = {
	&abi_version_attr.attr,
	&mem_policy_attr.attr,
	&sched_policy_attr.attr,
	&stats_attr.attr,
	NULL,
};

static const struct attribute_group gpu_ext_group = {
	.attrs = gpu_ext_attrs,
};

static int __init gpu_ext_init(void)
{
	int err;

	BTF_TYPE_EMIT(enum gpu_ext_abi);
	BTF_TYPE_EMIT_ENUM(GPU_EXT_ABI_VERSION);

	gpu_ext_kobj = kobject_create_and_add("gpu_ext", kernel_kobj);
	if (!gpu_ext_kobj)
		return -ENOMEM;
	err = sysfs_create_group(gpu_ext_kobj, &gpu_ext_group);
	if (err)
		goto put;
	err = gpu_ext_kfuncs_register();
	if (err) {
		pr_err("gpu_ext: registering kfuncs: %d\n", err);
		goto put;
	}
	err = gpu_ext_ops_register();
	if (err) {
		pr_err("gpu_ext: registering struct_ops: %d\n", err);
		goto put;
	}
	pr_info("gpu_ext: ABI %u, struct_ops gpu_mem_ops and gpu_sched_ops ready\n",
		gpu_ext_abi_version());
	return 0;
put:
	/* kfunc sets and struct_ops types registered by a module are dropped
	 * with the module's BTF when the load fails. */
	kobject_put(gpu_ext_kobj);
	return err;
}

static void __exit gpu_ext_exit(void)
{
	/* No policy can be attached here: an attached struct_ops map holds a
	 * reference on this module (bpf_struct_ops .owner). */
	kobject_put(gpu_ext_kobj);
}

module_init(gpu_ext_init);
module_exit(gpu_ext_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpu_ext: eBPF struct_ops hooks for GPU memory and scheduling policies");
MODULE_AUTHOR("otelcol-gpu");
