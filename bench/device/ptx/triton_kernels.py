"""Triton kernels whose PTX joins the parser/rewriter corpus (sm_90a: wgmma,
mbarrier, setmaxnreg and friends appear in the matmul)."""
import os, sys
import torch, triton, triton.language as tl

@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

@triton.jit
def softmax_kernel(out, inp, stride, ncols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(inp + row * stride + offs, mask=offs < ncols, other=-float("inf"))
    x = x - tl.max(x, 0)
    e = tl.exp(x)
    tl.store(out + row * stride + offs, e / tl.sum(e, 0), mask=offs < ncols)

@triton.jit
def matmul_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0); pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM); rn = pn * BN + tl.arange(0, BN); rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        av = tl.load(a + rm[:, None] * sam + (k + rk)[None, :] * sak)
        bv = tl.load(b + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
        acc += tl.dot(av, bv)
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16))

def main(outdir):
    d = "cuda"
    n = 4096
    x = torch.randn(n, device=d); y = torch.randn(n, device=d); o = torch.empty_like(x)
    k1 = add_kernel[(n // 1024,)](x, y, o, n, BLOCK=1024)
    s = torch.randn(64, 1000, device=d); so = torch.empty_like(s)
    k2 = softmax_kernel[(64,)](so, s, s.stride(0), 1000, BLOCK=1024)
    M = N = K = 512
    a = torch.randn(M, K, device=d, dtype=torch.float16); b = torch.randn(K, N, device=d, dtype=torch.float16)
    c = torch.empty(M, N, device=d, dtype=torch.float16)
    k3 = matmul_kernel[(M // 128, N // 128)](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                             c.stride(0), c.stride(1), BM=128, BN=128, BK=64)
    torch.cuda.synchronize()
    for name, k in (("triton_add", k1), ("triton_softmax", k2), ("triton_matmul", k3)):
        with open(os.path.join(outdir, name + ".ptx"), "w") as f:
            f.write(k.asm["ptx"])
    print("triton ptx written")

if __name__ == "__main__":
    main(sys.argv[1])
