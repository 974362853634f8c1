package jit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"
)

// fuzzRefs names a map for every raw slot, so map loads decode.
func fuzzRefs(n int) map[int]string {
	refs := map[int]string{}
	for i := 0; i < n; i++ {
		refs[i] = testMaps[i%len(testMaps)].Name
	}
	return refs
}

// FuzzDecodeVerify feeds arbitrary bytecode through the decoder, the
// verifier, code generation and the interpreter: nothing panics, and a
// program the verifier accepts runs in the interpreter without a memory
// fault (the verifier is sound for the accesses it allows).
func FuzzDecodeVerify(f *testing.F) {
	ins := func(op, regs byte, off int16, imm int32) []byte {
		b := make([]byte, 8)
		b[0], b[1] = op, regs
		binary.LittleEndian.PutUint16(b[2:], uint16(off))
		binary.LittleEndian.PutUint32(b[4:], uint32(imm))
		return b
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	f.Add(cat(ins(0xb7, 0x00, 0, 7), ins(0x95, 0, 0, 0)))                                            // r0 = 7; exit
	f.Add(cat(ins(0x79, 0x01, 8, 0), ins(0x37, 0x00, 0, 3), ins(0x95, 0, 0, 0)))                     // r0 = ctx->addr; r0 /= 3
	f.Add(cat(ins(0x62, 0x0a, -4, 1), ins(0x18, 0x11, 0, 0), ins(0, 0, 0, 0), ins(0xbf, 0xa2, 0, 0), // map lookup + NULL check
		ins(0x07, 0x02, 0, -4), ins(0x85, 0, 0, 1), ins(0x15, 0x00, 1, 0), ins(0x79, 0x00, 0, 0), ins(0x95, 0, 0, 0)))
	f.Add(cat(ins(0xb7, 0x00, 0, 0), ins(0x07, 0x00, 0, 1), ins(0xa5, 0x00, -2, 10), ins(0x95, 0, 0, 0))) // bounded loop
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 8*256 {
			return
		}
		insns, err := Decode(raw, fuzzRefs(len(raw)/8))
		if err != nil {
			return
		}
		o := &Object{Programs: []Program{{Name: "f", Section: "gpu/entry/*", Site: SiteEntry, Kernel: "*", Insns: insns}},
			Maps: testMaps, ringBytes: map[string]uint32{}}
		c, err := Compile([]*Object{o}, Options{Harness: true, MaxInsns: 20000})
		if err != nil {
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("not a verifier error: %v", err)
			}
			return
		}
		region := make([]byte, c.Layout.Size)
		if err := c.Layout.Init(region); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Run(0, region, ctxEnv(3, 5)); err != nil {
			t.Fatalf("verified program faults in the interpreter: %v\n%s", err, c.PTX)
		}
	})
}

// FuzzLoadObject: arbitrary ELF bytes give an object or an error, never a panic.
func FuzzLoadObject(f *testing.F) {
	for _, p := range []string{"check/progs/reject.bpf.o", "../../bpf/device/launch_latency.bpf.o"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := LoadObject(bytes.NewReader(b))
		if err != nil {
			return
		}
		_, _ = Compile([]*Object{o}, Options{MaxInsns: 20000})
	})
}
