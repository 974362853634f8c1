// Probes for the inlining golden test (TestInlineGolden): a block init with
// a guarded ret and a label before its last ret, an entry probe returning a value (carried to the exits),
// an exit probe reading it and calling a helper, and a probe with .local
// memory, which is called, not copied.
.visible .global .align 8 .u64 __gpuext_shared;
.shared .align 8 .b8 blk[16];

.func blk_init()
{
	.reg .b32 %bi<2>;
	.reg .pred %bp;
	mov.u32 %bi0, %tid.x;
	setp.ne.u32 %bp, %bi0, 0;
	@%bp ret;
	mov.u32 %bi1, %tid.y;
	setp.ne.u32 %bp, %bi1, 0;
	@%bp bra $skip;
	st.shared.u64 [blk], 0;
$skip:
	ret;
}

.func (.param .b64 r) p_entry(.param .u64 ks, .param .u64 addr, .param .u64 kid)
{
	.reg .b64 %e<3>;
	.reg .pred %ep;
	ld.param.u64 %e0, [ks];
	ld.param.u64 %e1, [kid];
	setp.eq.u64 %ep, %e0, 0;
	@%ep bra $done;
	add.u64 %e2, %e0, %e1;
	mov.u64 %e0, %globaltimer;
$done:
	st.param.b64 [r], %e0;
	ret;
}

.func helper(.param .b64 v)
{
	ret;
}

.func p_exit(.param .u64 ks, .param .u64 entry_ret, .param .u64 kid)
{
	.reg .b64 %x<3>;
	ld.param.u64 %x0, [entry_ret];
	ld.global.u64 %x1, [__gpuext_shared];
	red.global.add.u64 [%x1], %x0;
	{
		.param .b64 hp;
		st.param.b64 [hp], %x0;
		call helper, (hp);
	}
	ret;
}

.func p_local(.param .u64 ks, .param .u64 addr, .param .u64 kid)
{
	.local .align 8 .b8 stk[8];
	.reg .b64 %l0;
	ld.param.u64 %l0, [addr];
	st.local.u64 [stk], %l0;
	ret;
}
