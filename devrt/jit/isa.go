package jit

import (
	"encoding/binary"
	"fmt"
)

// eBPF instruction encoding (Documentation/bpf/standardization/instruction-set.rst).
const (
	clsLD    = 0x00
	clsLDX   = 0x01
	clsST    = 0x02
	clsSTX   = 0x03
	clsALU   = 0x04
	clsJMP   = 0x05
	clsJMP32 = 0x06
	clsALU64 = 0x07

	srcK = 0x00
	srcX = 0x08

	sizeW  = 0x00
	sizeH  = 0x08
	sizeB  = 0x10
	sizeDW = 0x18

	modeIMM    = 0x00
	modeMEM    = 0x60
	modeMEMSX  = 0x80
	modeATOMIC = 0xc0

	aluADD  = 0x00
	aluSUB  = 0x10
	aluMUL  = 0x20
	aluDIV  = 0x30
	aluOR   = 0x40
	aluAND  = 0x50
	aluLSH  = 0x60
	aluRSH  = 0x70
	aluNEG  = 0x80
	aluMOD  = 0x90
	aluXOR  = 0xa0
	aluMOV  = 0xb0
	aluARSH = 0xc0
	aluEND  = 0xd0

	jmpJA   = 0x00
	jmpJEQ  = 0x10
	jmpJGT  = 0x20
	jmpJGE  = 0x30
	jmpJSET = 0x40
	jmpJNE  = 0x50
	jmpJSGT = 0x60
	jmpJSGE = 0x70
	jmpCALL = 0x80
	jmpEXIT = 0x90
	jmpJLT  = 0xa0
	jmpJLE  = 0xb0
	jmpJSLT = 0xc0
	jmpJSLE = 0xd0

	atomADD     = 0x00
	atomOR      = 0x40
	atomAND     = 0x50
	atomXOR     = 0xa0
	atomFETCH   = 0x01
	atomXCHG    = 0xe0 | atomFETCH
	atomCMPXCHG = 0xf0 | atomFETCH

	pseudoMapFD    = 1
	pseudoMapValue = 2
	pseudoCall     = 1 // CALL src: bpf-to-bpf
	pseudoKfunc    = 2 // CALL src: kfunc
)

// Insn is one decoded eBPF instruction. An LD_IMM64 takes two 8-byte slots
// and is one Insn with Wide set.
type Insn struct {
	Op       uint8
	Dst, Src uint8
	Off      int16
	Imm      int64 // LD_IMM64: both halves; else the sign-extended 32-bit imm
	Raw      int   // index of its first 8-byte slot
	Wide     bool
	Map      string // LD_IMM64 of a map (pseudo src 1 or 2): its name
	MapOff   int32  // pseudo src 2 (map value): offset into the value
	Line     string // source line, when the object has BTF line info
}

func (i Insn) class() uint8  { return i.Op & 0x07 }
func (i Insn) aluOp() uint8  { return i.Op & 0xf0 }
func (i Insn) src() uint8    { return i.Op & 0x08 }
func (i Insn) size() uint8   { return i.Op & 0x18 }
func (i Insn) mode() uint8   { return i.Op & 0xe0 }
func (i Insn) isJump() bool  { return i.class() == clsJMP || i.class() == clsJMP32 }
func (i Insn) isALU() bool   { return i.class() == clsALU || i.class() == clsALU64 }
func (i Insn) imm32() int32  { return int32(i.Imm) }
func (i Insn) bytes() int    { return sizeBytes(i.size()) }
func (i Insn) isCall() bool  { return i.class() == clsJMP && i.aluOp() == jmpCALL }
func (i Insn) isExit() bool  { return i.class() == clsJMP && i.aluOp() == jmpEXIT }
func (i Insn) isLdImm() bool { return i.class() == clsLD && i.size() == sizeDW && i.mode() == modeIMM }

func sizeBytes(s uint8) int {
	switch s {
	case sizeB:
		return 1
	case sizeH:
		return 2
	case sizeW:
		return 4
	}
	return 8
}

// Decode decodes raw little-endian eBPF bytecode. refs names the map of an
// LD_IMM64 by its raw slot index (from the ELF relocations). It checks the
// encoding only (opcode known, registers in range, wide loads complete);
// the verifier checks the rest.
func Decode(raw []byte, refs map[int]string) ([]Insn, error) {
	if len(raw)%8 != 0 {
		return nil, fmt.Errorf("bytecode of %d bytes is not a multiple of 8", len(raw))
	}
	n := len(raw) / 8
	var out []Insn
	for s := 0; s < n; s++ {
		b := raw[8*s:]
		in := Insn{
			Op:  b[0],
			Dst: b[1] & 0x0f,
			Src: b[1] >> 4,
			Off: int16(binary.LittleEndian.Uint16(b[2:])),
			Imm: int64(int32(binary.LittleEndian.Uint32(b[4:]))),
			Raw: s,
		}
		if in.Dst > 10 || in.Src > 10 {
			return nil, fmt.Errorf("insn %d: register out of range (dst r%d, src r%d)", s, in.Dst, in.Src)
		}
		if in.isLdImm() {
			if s+1 >= n {
				return nil, fmt.Errorf("insn %d: LD_IMM64 without its second half", s)
			}
			b2 := raw[8*(s+1):]
			if b2[0] != 0 || b2[1] != 0 || b2[2] != 0 || b2[3] != 0 {
				return nil, fmt.Errorf("insn %d: malformed second half of LD_IMM64", s)
			}
			hi := binary.LittleEndian.Uint32(b2[4:])
			in.Imm = int64(uint64(uint32(in.Imm)) | uint64(hi)<<32)
			in.Wide = true
			switch in.Src {
			case 0:
			case pseudoMapFD, pseudoMapValue:
				name, ok := refs[s]
				if !ok || name == "" {
					return nil, fmt.Errorf("insn %d: map load without a map reference", s)
				}
				in.Map = name
				if in.Src == pseudoMapValue {
					in.MapOff = int32(hi)
				}
			default:
				return nil, fmt.Errorf("insn %d: LD_IMM64 with src %d (only maps and constants are supported)", s, in.Src)
			}
			s++
		} else if err := checkOpcode(in); err != nil {
			return nil, fmt.Errorf("insn %d: %w", s, err)
		}
		out = append(out, in)
	}
	return out, nil
}

func checkOpcode(in Insn) error {
	switch in.class() {
	case clsLD:
		return fmt.Errorf("legacy packet access opcode %#02x is not supported", in.Op)
	case clsLDX:
		if in.mode() != modeMEM && in.mode() != modeMEMSX {
			return fmt.Errorf("unknown load opcode %#02x", in.Op)
		}
		if in.mode() == modeMEMSX && in.size() == sizeDW {
			return fmt.Errorf("unknown load opcode %#02x", in.Op)
		}
	case clsST:
		if in.mode() != modeMEM {
			return fmt.Errorf("unknown store opcode %#02x", in.Op)
		}
	case clsSTX:
		switch in.mode() {
		case modeMEM:
		case modeATOMIC:
			if in.size() != sizeW && in.size() != sizeDW {
				return fmt.Errorf("atomic of %d bytes (only 4 and 8)", in.bytes())
			}
			switch in.Imm {
			case atomADD, atomOR, atomAND, atomXOR, atomADD | atomFETCH, atomOR | atomFETCH,
				atomAND | atomFETCH, atomXOR | atomFETCH, atomXCHG, atomCMPXCHG:
			default:
				return fmt.Errorf("unknown atomic operation %#x", in.Imm)
			}
		default:
			return fmt.Errorf("unknown store opcode %#02x", in.Op)
		}
	case clsALU, clsALU64:
		op := in.aluOp()
		if op > aluEND {
			return fmt.Errorf("unknown ALU opcode %#02x", in.Op)
		}
		if op == aluEND {
			if in.Imm != 16 && in.Imm != 32 && in.Imm != 64 {
				return fmt.Errorf("byte swap of %d bits", in.Imm)
			}
			if in.class() == clsALU64 && in.src() != 0 {
				return fmt.Errorf("unknown ALU opcode %#02x", in.Op)
			}
		}
		switch in.Off {
		case 0:
		case 1:
			if op != aluDIV && op != aluMOD {
				return fmt.Errorf("ALU opcode %#02x with offset 1", in.Op)
			}
		case 8, 16, 32:
			if op != aluMOV || in.src() != srcX || (in.Off == 32 && in.class() == clsALU) {
				return fmt.Errorf("ALU opcode %#02x with offset %d", in.Op, in.Off)
			}
		default:
			return fmt.Errorf("ALU opcode %#02x with offset %d", in.Op, in.Off)
		}
	case clsJMP, clsJMP32:
		op := in.aluOp()
		if op > jmpJSLE {
			return fmt.Errorf("unknown jump opcode %#02x", in.Op)
		}
		if (op == jmpCALL || op == jmpEXIT) && in.class() == clsJMP32 {
			return fmt.Errorf("unknown jump opcode %#02x", in.Op)
		}
	}
	return nil
}
