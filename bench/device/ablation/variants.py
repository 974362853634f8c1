"""Adds memory-model variants of a jitcheck bench directory's modules.

Each module instrumented with one of PROBES gets copies whose map accesses
use another PTX form, so one jit_ablation run compares them:
  gpu:  ld/st.volatile -> ld/st.relaxed.gpu (GPU scope instead of system)
  weak: st.volatile -> st.global, ld.volatile -> ld.global.cg (L2, no order)
  stclaim: a ring slot marked and committed with stores, not atomics
        (no round trip after the head's atom.add)
  nohead: the ring's head from %globaltimer instead of its atom.add
        (timing only: records may collide)
  vec:  the ring record's payload in 16-byte stores
  lean: vec, and no claim or commit atomics: the header in one more
        16-byte store (timing only)
  clk:  %clock64 instead of %globaltimer (timing only)
  relaxed: per-block (shared memory) fetching atomics relaxed, not acq_rel
  nobar: the kernel's entry without the per-block init and its bar.sync
        (wrong results: what the init and the barrier cost)
  relaxednobar: both
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
FORMS["nohead"] = [(re.compile(r"@%xq atom\.global\.add\.u64\s+%xbase, \[%xb\], %xd;"),
                    "mov.u64 %xbase, %globaltimer;")]
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


def main(src, dst, probes, forms):
    shutil.copytree(src, dst, dirs_exist_ok=True)
    bf = json.load(open(os.path.join(src, "bench.json")))
    out = []
    for v in bf["variants"]:
        out.append(v)
        if v.get("probe") not in probes:
            continue
        text = open(os.path.join(src, v["ptx"])).read()
        for form in forms:
            subs = FORMS[form]
            t = text
            for a, b in subs:
                t = a.sub(b, t) if isinstance(a, re.Pattern) else t.replace(a, b)
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
