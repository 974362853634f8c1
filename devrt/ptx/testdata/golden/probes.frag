// Two minimal probes for the golden tests (the GPU check uses ../probe_count.ptx).
.visible .global .align 8 .u64 __gpuext_shared;

.visible .func __gpuext_probe_0(.param .u64 kind_site, .param .u64 addr, .param .u64 kernel_id)
{
	ret;
}

.visible .func __gpuext_probe_1(.param .b64 kind_site, .param .u64 addr, .param .b64 kernel_id)
{
	ret;
}
