// SPDX-License-Identifier: GPL-2.0-only
/*
 * sim_main.c - /dev/gpu_ext_sim: the protocol of gpuext_abi.h's sim section.
 *
 * gpu_ext_sim exists so policies can be tested on a real kernel without a
 * GPU: it is a driver in the sense that matters, calling the gpu_ext entry
 * points from the places a patched UVM/RM driver does, with a memory
 * manager and a scheduler simple enough that results are exact and
 * deterministic. This file only moves records across the user boundary,
 * checks them, and keeps one session per open file.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "sim.h"

static int sim_open(struct inode *inode, struct file *file)
{
	struct sim_session *s = kzalloc(sizeof(*s), GFP_KERNEL);

	if (!s)
		return -ENOMEM;
	mutex_init(&s->lock);
	file->private_data = s;
	return 0;
}

static void sim_drop(struct sim_session *s)
{
	sim_mem_free(s->mem);
	sim_sched_free(s->sched);
	s->mem = NULL;
	s->sched = NULL;
	s->mode = SIM_MODE_NONE;
}

static int sim_release(struct inode *inode, struct file *file)
{
	struct sim_session *s = file->private_data;

	sim_drop(s);
	kfree(s);
	return 0;
}

/* Copies a whole write of fixed-size records into kernel memory. */
static void *sim_copy_records(const char __user *buf, size_t len, size_t rec, size_t *n)
{
	void *k;

	if (len == 0 || len % rec != 0 || len / rec > GPUEXT_SIM_MAX_WRITE)
		return ERR_PTR(-EINVAL);
	k = kvmalloc(len, GFP_KERNEL);
	if (!k)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(k, buf, len)) {
		kvfree(k);
		return ERR_PTR(-EFAULT);
	}
	*n = len / rec;
	return k;
}

static ssize_t sim_write_mem(struct sim_session *s, const char __user *buf, size_t len)
{
	struct gpuext_sim_access *a;
	size_t n, i, done;
	int err = 0;

	a = sim_copy_records(buf, len, sizeof(*a), &n);
	if (IS_ERR(a))
		return PTR_ERR(a);
	for (i = 0; i < n; i++) {
		err = sim_mem_check_access(&a[i]);
		if (err)
			goto out;
	}
	done = sim_mem_replay(s->mem, a, n, &err);
	/* Stopped at a bound: the records before it were replayed. */
	if (done > 0)
		err = 0;
	len = done * sizeof(*a);
out:
	kvfree(a);
	return err ? err : len;
}

static ssize_t sim_write_sched(struct sim_session *s, const char __user *buf, size_t len)
{
	struct gpuext_sim_job *jobs;
	size_t n;
	int err;

	jobs = sim_copy_records(buf, len, sizeof(*jobs), &n);
	if (IS_ERR(jobs))
		return PTR_ERR(jobs);
	err = sim_sched_queue(s->sched, jobs, n);
	kvfree(jobs);
	return err ? err : len;
}

static ssize_t sim_write(struct file *file, const char __user *buf, size_t len, loff_t *off)
{
	struct sim_session *s = file->private_data;
	ssize_t ret;

	mutex_lock(&s->lock);
	if (s->mode == SIM_MODE_MEM)
		ret = sim_write_mem(s, buf, len);
	else if (s->mode == SIM_MODE_SCHED)
		ret = sim_write_sched(s, buf, len);
	else
		ret = -EBADFD;
	mutex_unlock(&s->lock);
	return ret;
}

static long sim_mem_reset(struct sim_session *s, void __user *arg)
{
	struct gpuext_sim_mem_config cfg;
	struct sim_mem *m;
	int err;

	if (copy_from_user(&cfg, arg, sizeof(cfg)))
		return -EFAULT;
	err = sim_mem_check_config(&cfg);
	if (err)
		return err;
	m = sim_mem_new(&cfg);
	if (!m)
		return -ENOMEM;
	sim_drop(s);
	s->mem = m;
	s->mode = SIM_MODE_MEM;
	return 0;
}

static long sim_mem_get_result(struct sim_session *s, void __user *arg)
{
	struct gpuext_sim_mem_result *res;
	long ret = 0;

	if (s->mode != SIM_MODE_MEM)
		return -EBADFD;
	res = kzalloc(sizeof(*res), GFP_KERNEL);
	if (!res)
		return -ENOMEM;
	sim_mem_result(s->mem, res);
	if (copy_to_user(arg, res, sizeof(*res)))
		ret = -EFAULT;
	kfree(res);
	return ret;
}

static long sim_sched_reset(struct sim_session *s, void __user *arg)
{
	struct gpuext_sim_sched_config *cfg;
	struct sim_sched *sched;
	long err;

	cfg = memdup_user(arg, sizeof(*cfg));
	if (IS_ERR(cfg))
		return PTR_ERR(cfg);
	err = sim_sched_check_config(cfg);
	if (err)
		goto out;
	sched = sim_sched_new(cfg);
	if (!sched) {
		err = -ENOMEM;
		goto out;
	}
	sim_drop(s);
	s->sched = sched;
	s->mode = SIM_MODE_SCHED;
out:
	kfree(cfg);
	return err;
}

static long sim_sched_do_run(struct sim_session *s, void __user *arg)
{
	struct gpuext_sim_sched_result *res;
	long err;

	if (s->mode != SIM_MODE_SCHED)
		return -EBADFD;
	res = kzalloc(sizeof(*res), GFP_KERNEL);
	if (!res)
		return -ENOMEM;
	err = sim_sched_run(s->sched, res);
	if (!err && copy_to_user(arg, res, sizeof(*res)))
		err = -EFAULT;
	kfree(res);
	return err;
}

static long sim_do_bench(void __user *arg)
{
	struct gpuext_sim_bench b;
	long err;

	if (copy_from_user(&b, arg, sizeof(b)))
		return -EFAULT;
	err = sim_bench(&b);
	if (!err && copy_to_user(arg, &b, sizeof(b)))
		err = -EFAULT;
	return err;
}

static long sim_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct sim_session *s = file->private_data;
	void __user *uarg = (void __user *)arg;
	long ret;

	mutex_lock(&s->lock);
	switch (cmd) {
	case GPUEXT_SIM_IOC_MEM_RESET:
		ret = sim_mem_reset(s, uarg);
		break;
	case GPUEXT_SIM_IOC_MEM_RESULT:
		ret = sim_mem_get_result(s, uarg);
		break;
	case GPUEXT_SIM_IOC_SCHED_RESET:
		ret = sim_sched_reset(s, uarg);
		break;
	case GPUEXT_SIM_IOC_SCHED_RUN:
		ret = sim_sched_do_run(s, uarg);
		break;
	case GPUEXT_SIM_IOC_BENCH:
		ret = sim_do_bench(uarg);
		break;
	default:
		ret = -ENOTTY;
	}
	mutex_unlock(&s->lock);
	return ret;
}

static const struct file_operations sim_fops = {
	.owner = THIS_MODULE,
	.open = sim_open,
	.release = sim_release,
	.write = sim_write,
	.unlocked_ioctl = sim_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice sim_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gpu_ext_sim",
	.fops = &sim_fops,
	.mode = 0600,
};

static int __init sim_init(void)
{
	u32 abi = gpu_ext_abi_version();

	if (abi != GPUEXT_KMOD_ABI_VERSION) {
		pr_err("gpu_ext_sim: gpu_ext ABI %u, built for %u\n", abi, GPUEXT_KMOD_ABI_VERSION);
		return -EINVAL;
	}
	return misc_register(&sim_dev);
}

static void __exit sim_exit(void)
{
	misc_deregister(&sim_dev);
}

module_init(sim_init);
module_exit(sim_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpu_ext_sim: a simulated UVM memory manager and GPU scheduler calling gpu_ext");
MODULE_AUTHOR("otelcol-gpu");
