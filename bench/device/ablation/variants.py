"""Adds memory-model variants of a jitcheck bench directory's modules.

Each module instrumented with one of PROBES gets copies whose map accesses
use another PTX form, so one jit_ablation run compares them:
  gpu:  ld/st.volatile -> ld/st.relaxed.gpu (GPU scope instead of system)
  weak: st.volatile -> st.global, ld.volatile -> ld.global.cg (L2, no order)
  stclaim: a ring slot marked and committed with stores, not atomics
        (no round trip after the head's atom.add)
  nohead: the ring's head from %globaltimer instead of its atom.add
        (timing only: records may collide)
  claimclk: gpuext_ring_claim's atom.add (block_sched's index, taken by
        thread 0 at entry and waited for at its exit) a read of %clock64
        (timing only: records collide): what the claim's round trip
        costs a short block
  vec:  the ring record's payload in 16-byte stores
  lean: vec, and no claim or commit atomics: the header in one more
        16-byte store (timing only)
  clk:  %clock64 instead of %globaltimer (timing only)
  relaxed: per-block (shared memory) fetching atomics relaxed, not acq_rel
  acqfence: per-block fetching atomics acquire-only, and a fence.acq_rel.cta
        after each per-block store (thread 0's start): the release moved
        from every warp's count to thread 0's entry
  acq: the same without the fence (timing only)
  nobar: the kernel's entry without the per-block init and its bar.sync
        (wrong results: what the init and the barrier cost)
  relaxednobar: both
  onestore: the ring record's header store only, no payload stores
        (timing only: what the three payload stores cost)
  nostores: the ring record's index taken, nothing stored (its fields and
        check go dead with the stores; timing only)
  claimclknostores: claimclk and nostores: no claim and no record (the
        record's fields and check, used by its stores alone, go dead and
        ptxas drops them; timing only)
  relaxedclaimclk: relaxed and claimclk: the record stored with no wait
        for the claim or for the warp's earlier stores (MEMBAR.ALL.CTA)
        ahead of it (timing only)
  red4: each of the record's four 16-byte stores a red.global.add of its
        first word instead (timing only: is a reduction at the block's end
        cheaper than a store)
  onestorenohead: onestore and nohead (one store, no atomic)
  stconst: onestorenohead with the header's check replaced by its seq:
        the store no longer waits for the end time, the start time or the
        check's multiplies (timing only)
  chkts: onestorenohead with the header's check the start time xor the
        end time: the store waits for both reads, not for the multiplies
        (timing only)
  seqchk: the shipped record with its check the seq alone (timing only:
        what the check's chain of 64-bit multiplies costs)
  pchk: the shipped record with a check of 32-bit multiplies of the
        payload's halves summed in four independent chains, then one
        mix (timing only: a check the payload's part of which is ready
        before the ring index returns, and short after it)
  coop: the record written by four lanes of the warp in one 16-byte
        store each (one request for the 64-byte slot) after the warp
        reconverges, instead of four stores by the leader (timing only:
        assumes the exit's warp has lanes 0-3 active, as the vecadds do)
  hoist: sampling by launch (copy form): the original kernel's leading
        side-effect-free instructions (parameter loads, special registers,
        arithmetic, up to its first branch, label or memory access) moved
        from both copies to ahead of the sampling test, so that ptxas can
        overlap the test's chain with the kernel's own (timing: is the
        entry test's latency what a short block pays)
  s32: sampling by launch with the launch's block count and its clz in
        32 bits instead of 64 (timing only: wrong past 2^32 blocks)
  hoists32: both
  always: sampling by launch, every block branched to the copy of the
        original code (the test left dead): what the branch and the
        code's layout cost without the test (timing only)
  fixshift: sampling by launch with the launch's shift a constant (the
        kernel's, as devrt would pass it in a parameter): the hash and
        its shift, no block count, clz or clamp (timing only)
  mulhi: sampling by launch as mul.hi(hash, blocks) < 256: about 256
        blocks of any launch, no clz or clamp (timing only: weights are
        not powers of two)
  xonly: sampling by launch hashing ctaid.x alone (timing only: 1-D
        grids; the y and z terms off the path)
  xfix: both xonly and fixshift: the shortest test
  dim1: sampling by launch, a 1-D grid's blocks (nctaid.y * nctaid.z 1)
        hashing ctaid.x alone past a uniform branch, the others their
        linear index as before: the same blocks, ctaid.y and .z read only
        where they count
  dim1s: dim1, and a 1-D grid's block count nctaid.x (no product, no
        saturation) on that branch
  x1d: the test of a 1-D grid alone (an entry devrt would launch for 1-D
        grids only): ctaid.x's hash shifted by 32 - s, s from nctaid.x
        (clz of nctaid.x - 1 plus log2 256, at least 16)
  x1dmin: x1d clamping nctaid.x - 1 (min) before the clz instead of the
        shift after it
  d<b>c<n> (d0c1000, d0c2000, d0c4000, d1c2000, d8c2000): an uninstrumented
        module (PROBES ",": the empty probe name of the originals) whose
        block b spins n cycles of %clock64 at its start, nothing else
        (timing only: what one block's late start alone does to a
        kernel's time; on a patched module it would delay its first entry,
        not the 1-D one jit_bench launches)
onestore, red4, coop, vec, lean, seqchk and pchk were written for
block_sched's 64-byte record (before it named its launch's blocks: 80
bytes since): onestore and red4 leave the +64 store, coop's registers are
the old ones, and the others no longer match (a form that changes nothing
adds no module; one of several substitutions that matches nothing is
reported).

usage: variants.py SRC DST [PROBES [FORMS]]
       (default ab_store,ab_load,sm_load,block_sched,warp_occupancy and gpu,weak)
"""
import json
import re
import os
import shutil
import sys

FORMS = {
    "gpu": [("ld.volatile.global", "ld.relaxed.gpu.global"), ("st.volatile.global", "st.relaxed.gpu.global")],
    "weak": [("ld.volatile.global", "ld.global.cg"), ("st.volatile.global", "st.global")],
    "stclaim": [(re.compile(r"atom\.acquire\.gpu\.global\.max\.u64\s+%gt3, \[%gt2\+0\], %gt4;"),
                 "st.relaxed.gpu.global.u64 [%gt2+0], %gt4;\n\tmov.b64 %gt3, 0;"),
                (re.compile(r"atom\.release\.gpu\.global\.cas\.b64\s+%gt3, \[%gt2\+0\], %gt4, %gt5;"),
                 "st.release.gpu.global.u64 [%gt2+0], %gt5;")],
}
# timing only: the ring's head taken from %globaltimer, not an atom.add
# (records may collide): what waiting for the head costs
FORMS["nohead"] = [(re.compile(r"(?:@%xq )?atom\.global\.add\.u64\s+%xbase, \[%xb\], (?:%xd|1);"),
                    "mov.u64 %xbase, %globaltimer;")]
FORMS["claimclk"] = [("@%xq atom.global.add.u64 \t%gr0, [%xb], 1;", "@%xq mov.u64 \t%gr0, %clock64;")]
# the ring record's payload in 16-byte stores (st.global.v2.u64) instead
# of 8-byte ones
VEC = (re.compile(r"mov\.b64\s+%gt0, (%gs\d+);\s*st\.global\.u64\s+\[%gt2\+(16|32|48)\], %gt0;"
                  r"\s*mov\.b64\s+%gt0, (%gs\d+);\s*st\.global\.u64\s+\[%gt2\+(?:24|40|56)\], %gt0;"),
       r"st.global.v2.u64 [%gt2+\2], {\1, \3};")
FORMS["vec"] = [VEC]
# timing only: the record as one atom.add for its head and four 16-byte
# stores, header included (no claim, no commit: what a record checked by
# the reader instead would cost)
FORMS["lean"] = [VEC,
                 (re.compile(r"atom\.acquire\.gpu\.global\.max\.u64\s+%gt3, \[%gt2\+0\], %gt4;"), "mov.b64 %gt3, 0;"),
                 (re.compile(r"mov\.b32\s+%gw0, \d+;\s*st\.volatile\.global\.u32\s+\[%gt2\+8\], %gw0;\s*"
                             r"shl\.b64\s+%gt5, %gt1, 1;\s*atom\.release\.gpu\.global\.cas\.b64\s+%gt3, \[%gt2\+0\], %gt4, %gt5;"),
                  "shl.b64 %gt5, %gt1, 1;\n\tst.global.v2.u64 [%gt2+0], {%gt5, %gt4};")]
# timing only: %clock64 (the SM's cycle counter) instead of %globaltimer
FORMS["clk"] = [(re.compile(r"mov\.u64(\s+%\w+), %globaltimer;"), r"mov.u64\1, %clock64;")]
FORMS["relaxed"] = [("atom.acq_rel.cta.shared", "atom.shared")]
# the init is a call in modules patched with -calls, inlined otherwise
FORMS["nobar"] = [(re.compile(r"call\s+__gpuext_block_init;"), ""),
                  (re.compile(r"\{[^{}]*\}\s*(\$GXI\d+_END:\s*)?bar\.sync\s+0;"), ""), (re.compile(r"bar\.sync\s+0;"), "")]
FORMS["relaxednobar"] = FORMS["relaxed"] + FORMS["nobar"]
# per-block counts acquire-only, and a fence after each per-block store:
# the store (thread 0's start) is released by the fence and the count's
# atomic that follows it, the last warp's acquire reads it (a release
# fence in thread 0's warp at entry, none before each warp's count)
FORMS["acqfence"] = [("atom.acq_rel.cta.shared", "atom.acquire.cta.shared"),
                     (re.compile(r"(st\.volatile\.shared\.u64\s+\[%gr\d+\], %gr\d+;)"), r"\1\n\tfence.acq_rel.cta;")]
# the same without the fence (timing only: what acquire alone costs)
FORMS["acq"] = [("atom.acq_rel.cta.shared", "atom.acquire.cta.shared")]
RSTORE = r"\t\tst\.global\.v2\.u64 \t\[%gt2\+{}\], \{{[^}}]*\}};\n"
FORMS["onestore"] = [(re.compile(RSTORE.format("(?:16|32|48)")), "")]
FORMS["nostores"] = [(re.compile(RSTORE.format("(?:0|16|32|48|64)")), ""),
                     (re.compile(r"\t\tst\.global\.u64 \t\[%gt2\+(?:16|32|48|64)\], %gt0;\n"), "")]
FORMS["claimclknostores"] = FORMS["claimclk"] + FORMS["nostores"]
FORMS["relaxedclaimclk"] = FORMS["relaxed"] + FORMS["claimclk"]
DONE = re.compile(r"\$GX\d+_DONE_i\d+:\n(?:[^\n]*\n){3}\t\tmov\.b64 \t%gr0, \{%gw0, %gw1\};\n")


def coop(t):
    """Moves each ring record's four stores out of the leader's branch."""
    out, n = [], 0
    while True:
        m = re.search(RSTORE.format("16"), t)
        if not m:
            return "".join(out) + t
        init = t.rfind("\t\tmov.b64 \t%gbase, 0;\n", 0, m.start())
        head = re.compile(RSTORE.format("0")).search(t, m.end())
        d = DONE.search(t, head.end())
        body = t[init:head.end()]
        body = re.sub(RSTORE.format("(?:16|32|48)"), "", body)
        body = re.sub(RSTORE.format("0"), "\t\tmov.b64 \t%gt13, 1;\n", body)
        body = body.replace("\t\tmov.b64 \t%gbase, 0;\n", "\t\tmov.b64 \t%gbase, 0;\n\t\tmov.b64 \t%gt13, 0;\n", 1)
        sh = "".join(f"\t\tmov.b64 \t{{%cw0, %cw1}}, {r};\n\t\tshfl.sync.idx.b32 \t%cw0, %cw0, %glead, 31, %gmask;\n"
                     f"\t\tshfl.sync.idx.b32 \t%cw1, %cw1, %glead, 31, %gmask;\n\t\tmov.b64 \t{r}, {{%cw0, %cw1}};\n"
                     for r in ["%gt2", "%gt5", "%gt11", "%gs54", "%gs55", "%gs56", "%gs57", "%gs58", "%gs59"])
        sel = "".join(f"\t\tsetp.eq.u32 \t%cq1, %cw2, {k};\n\t\t@%cq1 mov.b64 \t%gt5, %gs{52 + 2 * k};\n"
                      f"\t\t@%cq1 mov.b64 \t%gt11, %gs{53 + 2 * k};\n" for k in (1, 2, 3))
        ins = ("\t\t{\n\t\t.reg .b32 %cw<3>;\n\t\t.reg .b64 %cd0;\n\t\t.reg .pred %cq<2>;\n"
               "\t\tmov.b64 \t{%cw0, %cw1}, %gt13;\n\t\tshfl.sync.idx.b32 \t%cw0, %cw0, %glead, 31, %gmask;\n"
               f"\t\tsetp.eq.u32 \t%cq0, %cw0, 0;\n\t\t@%cq0 bra \t$GXC_SKIP{n};\n" + sh +
               "\t\tmov.u32 \t%cw2, %laneid;\n" + sel +
               "\t\tmul.wide.u32 \t%cd0, %cw2, 16;\n\t\tadd.s64 \t%cd0, %cd0, %gt2;\n"
               "\t\tsetp.lt.u32 \t%cq1, %cw2, 4;\n\t\t@%cq1 st.global.v2.u64 \t[%cd0], {%gt5, %gt11};\n"
               f"$GXC_SKIP{n}:\n\t\t}}\n")
        out.append(t[:init] + body + t[head.end():d.end()] + ins)
        t = t[d.end():]
        n += 1


FORMS["coop"] = [coop]
FORMS["red4"] = [(re.compile(r"st\.global\.v2\.u64 \t\[%gt2\+(\d+)\], \{(%\w+), %\w+\};"),
                  r"red.global.add.u64 \t[%gt2+\1], \2;")]
FORMS["onestorenohead"] = FORMS["onestore"] + FORMS["nohead"]
FORMS["chkts"] = FORMS["onestorenohead"] + [
    (re.compile(r"(\t\tst\.global\.v2\.u64 \t\[%gt2\+0\]), \{%gt5, %gt11\};"),
     r"\t\txor.b64 \t%gt11, %gs56, %gs57;\n\1, {%gt5, %gt11};")]
# the early hash of a payload in registers (while the index's atom.add is in flight)
EARLY = re.compile(r"\t\t\tmov\.b64 \t%gt11, 0x[0-9a-f]+;\n((?:\t\t\t(?:mov|xor|mul)\.[^\n]*\n)+)(?=\t\t\tmov\.b64 \t\{%xlo)")
HEADER = re.compile(r"(\t\tshl\.b64 \t%gt5, %gt1, 1;\n)\t\txor\.b64 \t%gt11, %gt11, %gt5;\n\t\tmul\.lo\.u64[^\n]*\n"
                    r"\t\tshr\.u64 \t%gt11, %gt11, 32;\n\t\tshl\.b64 \t%gt11, %gt11, 32;\n(\t\tor\.b64 \t%gt11, %gt11, \d+;\n)")


def pchk(t, seqonly=False):
    out = []
    while True:
        m = EARLY.search(t)
        if not m:
            return "".join(out) + t
        words = re.findall(r"mov\.b64 \t%gt\d+, (%gs\d+);", m.group(1))
        h = HEADER.search(t, m.end())
        if seqonly:
            chk = "\t\tmov.b64 \t%gt11, %gt5;\n\t\tshl.b64 \t%gt11, %gt11, 32;\n"
        else:
            regs = words + ["%gt5"]
            n = 2 * len(regs)
            c = ["\t\t{\n", f"\t\t.reg .b32 %ph<{n}>;\n", "\t\t.reg .b32 %pa<5>;\n"]
            c += [f"\t\tmov.b64 \t{{%ph{2 * i}, %ph{2 * i + 1}}}, {r};\n" for i, r in enumerate(regs)]
            k = [(0x9E3779B1 + 0x7F4A7C15 * j) & 0xFFFFFFFF | 1 for j in range(n)]
            for j in range(n):
                if j < 4:
                    c.append(f"\t\tmul.lo.u32 \t%pa{j}, %ph{j}, {k[j]};\n")
                else:
                    c.append(f"\t\tmad.lo.u32 \t%pa{j % 4}, %ph{j}, {k[j]}, %pa{j % 4};\n")
            c += ["\t\tadd.u32 \t%pa0, %pa0, %pa1;\n", "\t\tadd.u32 \t%pa2, %pa2, %pa3;\n",
                  "\t\tadd.u32 \t%pa0, %pa0, %pa2;\n", "\t\tshr.u32 \t%pa4, %pa0, 16;\n",
                  "\t\txor.b32 \t%pa0, %pa0, %pa4;\n", "\t\tmul.lo.u32 \t%pa0, %pa0, 0x85ebca6b;\n",
                  "\t\tshr.u32 \t%pa4, %pa0, 13;\n", "\t\txor.b32 \t%pa0, %pa0, %pa4;\n",
                  "\t\tmov.b64 \t%gt11, {0, %pa0};\n", "\t\t}\n"]
            chk = "".join(c)
        out.append(t[:m.start()] + t[m.end():h.start()] + h.group(1) + chk + h.group(2))
        t = t[h.end():]


FORMS["pchk"] = [pchk]
FORMS["seqchk"] = [lambda t: pchk(t, True)]
FORMS["stconst"] = FORMS["onestorenohead"] + [
    (re.compile(r"(\t\tst\.global\.v2\.u64 \t\[%gt2\+0\]), \{%gt5, %gt11\};"), r"\1, {%gt5, %gt5};")]


PURE = re.compile(r"\t(?:ld\.param|mov|mad|mul|add|sub|shl|shr|cvta|cvt|setp|and|or|xor|selp|rem|min|max|neg|not)\.[^\n]*;\n")


def hoist(t):
    """Moves the original code's pure prefix ahead of the sampling test."""
    o = t.find("$GXS_ORIG:\n")
    if o < 0:
        return t
    i = o + len("$GXS_ORIG:\n")
    pre = []
    while True:
        m = PURE.match(t, i)
        if not m or "%globaltimer" in m.group(0) or "%clock" in m.group(0):
            break
        pre.append(m.group(0))
        i = m.end()
    if not pre:
        return t
    block = "".join(pre)
    c = t.rfind(block, 0, o)
    test = t.find("\tmov.u32 \t%gx_r0, %ctaid.z;\n")
    if c < 0 or test < 0 or test > c:
        return t
    t = t[:o] + "$GXS_ORIG:\n" + t[o + len("$GXS_ORIG:\n") + len(block):]
    t = t[:c] + t[c + len(block):]
    return t[:test] + block + t[test:]


FORMS["hoist"] = [hoist]
FORMS["s32"] = [(re.compile(r"\tmov\.u32 \t%gx_r1, %nctaid\.y;\n\tmov\.u32 \t%gx_r2, %nctaid\.x;\n"
                            r"\tmul\.wide\.u32 \t%gx_rw0, %gx_r1, %gx_r2;\n\tmov\.u32 \t%gx_r1, %nctaid\.z;\n"
                            r"\tcvt\.u64\.u32 \t%gx_rw1, %gx_r1;\n\tmul\.lo\.u64 \t%gx_rw0, %gx_rw0, %gx_rw1;\n"
                            r"\tsub\.u64 \t%gx_rw0, %gx_rw0, 1;\n\tclz\.b64 \t%gx_r1, %gx_rw0;\n\tsub\.s32 \t%gx_r1, %gx_r1, 24;\n"),
                 "\tmov.u32 \t%gx_r1, %nctaid.y;\n\tmov.u32 \t%gx_r2, %nctaid.x;\n\tmul.lo.u32 \t%gx_r1, %gx_r1, %gx_r2;\n"
                 "\tmov.u32 \t%gx_r2, %nctaid.z;\n\tmul.lo.u32 \t%gx_r1, %gx_r1, %gx_r2;\n\tsub.u32 \t%gx_r1, %gx_r1, 1;\n"
                 "\tclz.b32 \t%gx_r1, %gx_r1;\n\tadd.s32 \t%gx_r1, %gx_r1, 8;\n")]
FORMS["hoists32"] = FORMS["hoist"] + FORMS["s32"]


# The by-launch test's shift: from the second read of %nctaid.y to the
# shr; and its hash of the block's linear index.
SHIFT = re.compile(r"\tmov\.u32 \t%gx_r1, %nctaid\.y;\n\tmov\.u32 \t%gx_r2, %nctaid\.z;\n(?:[^\n]*\n)*?"
                   r"\tshr\.b32 \t%gx_r0, %gx_r0, %gx_r1;\n")
HASH = re.compile(r"\tmov\.u32 \t%gx_r0, %ctaid\.z;\n(?:[^\n]*\n){4}\tmov\.u32 \t%gx_r2, %ctaid\.x;\n"
                  r"\tmad\.lo\.u32 \t%gx_r0, %gx_r0, %gx_r1, %gx_r2;\n")
# the kernel's grid, set by main for each module (fixshift's constant)
GRID = {"blocks": 1}


def fixshift(t):
    s = min(max((GRID["blocks"] - 1).bit_length() - 8, 0), 16)
    return SHIFT.sub(f"\tshr.b32 \t%gx_r0, %gx_r0, {32 - s};\n", t, count=1)


FORMS["always"] = [("\t@!%gx_s bra.uni \t$GXS_ORIG;\n", "\tbra.uni \t$GXS_ORIG;\n")]
FORMS["fixshift"] = [fixshift]
FORMS["mulhi"] = [(re.compile(SHIFT.pattern + r"\tsetp\.eq\.u32 \t%gx_s, %gx_r0, 0;\n"),
                   "\tmov.u32 \t%gx_r1, %nctaid.y;\n\tmov.u32 \t%gx_r2, %nctaid.z;\n\tmul.lo.u32 \t%gx_r1, %gx_r1, %gx_r2;\n"
                   "\tmov.u32 \t%gx_r2, %nctaid.x;\n\tmul.lo.u32 \t%gx_r1, %gx_r1, %gx_r2;\n"
                   "\tmul.hi.u32 \t%gx_r0, %gx_r0, %gx_r1;\n\tsetp.lt.u32 \t%gx_s, %gx_r0, 256;\n")]
FORMS["xonly"] = [(HASH, "\tmov.u32 \t%gx_r0, %ctaid.x;\n")]
FORMS["xfix"] = FORMS["xonly"] + FORMS["fixshift"]


# dim1 and dim1s: the test (from the hash to the shr) rewritten whole
TEST = re.compile(HASH.pattern + r"\tmul\.lo\.u32 \t%gx_r0, %gx_r0, 0x9E3779B9;\n" + SHIFT.pattern)
DIM1 = """\tmov.u32 \t%gx_r1, %nctaid.y;
\tmov.u32 \t%gx_r2, %nctaid.z;
\tmul.lo.u32 \t%gx_r1, %gx_r1, %gx_r2;
\tmov.u32 \t%gx_r0, %ctaid.x;
\tsetp.eq.u32 \t%gx_s, %gx_r1, 1;
\t@%gx_s bra.uni \t$GXS_1D;
\tmov.u32 \t%gx_r1, %ctaid.z;
\tmov.u32 \t%gx_r2, %nctaid.y;
\tmov.u32 \t%gx_r3, %ctaid.y;
\tmad.lo.u32 \t%gx_r1, %gx_r1, %gx_r2, %gx_r3;
\tmov.u32 \t%gx_r2, %nctaid.x;
\tmad.lo.u32 \t%gx_r0, %gx_r1, %gx_r2, %gx_r0;
$GXS_1D:
\tmul.lo.u32 \t%gx_r0, %gx_r0, 0x9E3779B9;
"""
DIM1S = """\tmov.u32 \t%gx_r1, %nctaid.y;
\tmov.u32 \t%gx_r2, %nctaid.z;
\tmul.lo.u32 \t%gx_r1, %gx_r1, %gx_r2;
\tmov.u32 \t%gx_r0, %ctaid.x;
\tmov.u32 \t%gx_r2, %nctaid.x;
\tsetp.eq.u32 \t%gx_s, %gx_r1, 1;
\t@%gx_s bra.uni \t$GXS_1D;
\tmov.u32 \t%gx_r3, %ctaid.z;
\tmov.u32 \t%gx_r1, %nctaid.y;
\tmov.u32 \t%gx_r0, %ctaid.y;
\tmad.lo.u32 \t%gx_r0, %gx_r3, %gx_r1, %gx_r0;
\tmov.u32 \t%gx_r1, %ctaid.x;
\tmad.lo.u32 \t%gx_r0, %gx_r0, %gx_r2, %gx_r1;
\tmov.u32 \t%gx_r1, %nctaid.y;
\tmov.u32 \t%gx_r3, %nctaid.z;
\tmul.lo.u32 \t%gx_r1, %gx_r1, %gx_r3;
\tmul.hi.u32 \t%gx_r3, %gx_r2, %gx_r1;
\tmad.lo.u32 \t%gx_r1, %gx_r2, %gx_r1, 0xFFFFFFFF;
\tset.ne.u32.u32 \t%gx_r3, %gx_r3, 0;
\tor.b32 \t%gx_r1, %gx_r1, %gx_r3;
\tbra.uni \t$GXS_SHIFT;
$GXS_1D:
\tsub.u32 \t%gx_r1, %gx_r2, 1;
$GXS_SHIFT:
\tmul.lo.u32 \t%gx_r0, %gx_r0, 0x9E3779B9;
\tclz.b32 \t%gx_r1, %gx_r1;
\tadd.u32 \t%gx_r1, %gx_r1, 8;
\tmax.u32 \t%gx_r1, %gx_r1, 16;
\tshr.b32 \t%gx_r0, %gx_r0, %gx_r1;
"""


def dim1(t):
    m = TEST.search(t)
    if not m:
        return t
    shift = m.group(0)[m.group(0).index("\tmov.u32 \t%gx_r1, %nctaid.y;\n\tmov.u32 \t%gx_r2, %nctaid.z;"):]
    return t[:m.start()] + DIM1 + shift + t[m.end():]


FORMS["dim1"] = [dim1]
FORMS["dim1s"] = [(TEST, lambda m: DIM1S)]

X1D = """\tmov.u32 \t%gx_r0, %ctaid.x;
\tmul.lo.u32 \t%gx_r0, %gx_r0, 0x9E3779B9;
\tmov.u32 \t%gx_r1, %nctaid.x;
\tsub.u32 \t%gx_r1, %gx_r1, 1;
\tclz.b32 \t%gx_r1, %gx_r1;
\tadd.u32 \t%gx_r1, %gx_r1, 8;
\tmax.u32 \t%gx_r1, %gx_r1, 16;
\tshr.b32 \t%gx_r0, %gx_r0, %gx_r1;
"""
X1DMIN = """\tmov.u32 \t%gx_r0, %ctaid.x;
\tmul.lo.u32 \t%gx_r0, %gx_r0, 0x9E3779B9;
\tmov.u32 \t%gx_r1, %nctaid.x;
\tsub.u32 \t%gx_r1, %gx_r1, 1;
\tmin.u32 \t%gx_r1, %gx_r1, 0xFFFFFF;
\tclz.b32 \t%gx_r1, %gx_r1;
\tadd.u32 \t%gx_r1, %gx_r1, 8;
\tshr.b32 \t%gx_r0, %gx_r0, %gx_r1;
"""
FORMS["x1d"] = [(TEST, lambda m: X1D)]
FORMS["x1dmin"] = [(TEST, lambda m: X1DMIN)]


def delay(block, cycles):
    """A form of an uninstrumented module (probe "": pass PROBES ","):
    block `block` (ctaid.x) of its first entry
    spins `cycles` cycles of %clock64 before its own code, no probe, no
    memory: what a delay of one block's start alone does to the kernel's
    time (timing only)."""
    spin = (f"\t{{\n\t.reg .b64 %dly<3>;\n\t.reg .pred %dlq;\n\t.reg .b32 %dlb;\n"
            f"\tmov.u32 %dlb, %ctaid.x;\n\tsetp.ne.u32 %dlq, %dlb, {block};\n\t@%dlq bra $DLY_DONE;\n"
            f"\tmov.u64 %dly0, %clock64;\n$DLY_LOOP:\n\tmov.u64 %dly1, %clock64;\n"
            f"\tsub.s64 %dly2, %dly1, %dly0;\n\tsetp.lt.s64 %dlq, %dly2, {cycles};\n\t@%dlq bra $DLY_LOOP;\n"
            f"$DLY_DONE:\n\t}}\n")

    def sub(t):
        m = re.search(r"\.entry [^{]*\{\n(?:\t\.reg [^\n]*\n)*", t)
        return t if not m else t[:m.end()] + spin + t[m.end():]
    return [sub]


# d<block>c<cycles>: that block's start delayed by that many cycles
for _b, _c in ((0, 1000), (0, 2000), (0, 4000), (1, 2000), (8, 2000)):
    FORMS[f"d{_b}c{_c}"] = delay(_b, _c)


def main(src, dst, probes, forms):
    shutil.copytree(src, dst, dirs_exist_ok=True)
    bf = json.load(open(os.path.join(src, "bench.json")))
    out = []
    for v in bf["variants"]:
        out.append(v)
        if v.get("probe") not in probes:
            continue
        text = open(os.path.join(src, v["ptx"])).read()
        GRID["blocks"] = next(k["grid"] * (k.get("grid_y", 1) or 1) for k in bf["kernels"] if k["name"] == v["kernel"])
        for form in forms:
            subs = FORMS[form]
            t = text
            idle = []
            for i, sub in enumerate(subs):
                before = t
                if callable(sub):
                    t = sub(t)
                else:
                    a, b = sub
                    t = a.sub(b, t) if isinstance(a, re.Pattern) else t.replace(a, b)
                if t == before:
                    idle.append(i)
            if t == text:
                continue
            if idle:  # a combined form that quietly became one of its parts
                print(f"variants.py: {form} on {v['ptx']}: substitution(s) {idle} matched nothing; not written",
                      file=sys.stderr)
                continue
            w = dict(v, name=f"{v['name']}~{form}", ptx=v["ptx"].replace(".ptx", f".{form}.ptx"))
            open(os.path.join(dst, w["ptx"]), "w").write(t)
            out.append(w)
    bf["variants"] = out
    json.dump(bf, open(os.path.join(dst, "bench.json"), "w"), indent=1)
    print(f"{dst}: {len(out)} modules")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2],
         (sys.argv[3] if len(sys.argv) > 3 else "ab_store,ab_load,sm_load,block_sched,warp_occupancy").split(","),
         (sys.argv[4] if len(sys.argv) > 4 else "gpu,weak").split(","))
