package jit

import (
	"math"
	"math/bits"
)

// The exact results of eBPF ALU and jump instructions, written once: the
// verifier folds constants with them and the interpreter runs them. The PTX
// code generator emits the same semantics (see ptx.go): 32-bit operations
// zero-extend, shift counts are masked, division by zero gives 0 and modulo
// by zero keeps the dividend, INT_MIN / -1 is INT_MIN.

// evalALU is dst op src for an ALU or ALU64 instruction (not MOVSX).
func evalALU(op uint8, a, b uint64, is32, signed bool, imm int64, srcBit uint8) uint64 {
	if is32 {
		x, y := uint32(a), uint32(b)
		var r uint32
		switch op {
		case aluADD:
			r = x + y
		case aluSUB:
			r = x - y
		case aluMUL:
			r = x * y
		case aluDIV:
			switch {
			case y == 0:
				r = 0
			case signed:
				if int32(y) == -1 {
					r = uint32(-int32(x))
				} else {
					r = uint32(int32(x) / int32(y))
				}
			default:
				r = x / y
			}
		case aluMOD:
			switch {
			case y == 0:
				r = x
			case signed:
				if int32(y) == -1 {
					r = 0
				} else {
					r = uint32(int32(x) % int32(y))
				}
			default:
				r = x % y
			}
		case aluOR:
			r = x | y
		case aluAND:
			r = x & y
		case aluXOR:
			r = x ^ y
		case aluLSH:
			r = x << (y & 31)
		case aluRSH:
			r = x >> (y & 31)
		case aluARSH:
			r = uint32(int32(x) >> (y & 31))
		case aluNEG:
			r = -x
		case aluMOV:
			r = y
		case aluEND:
			return endian(a, imm, srcBit == srcX)
		}
		return uint64(r)
	}
	switch op {
	case aluADD:
		return a + b
	case aluSUB:
		return a - b
	case aluMUL:
		return a * b
	case aluDIV:
		switch {
		case b == 0:
			return 0
		case signed:
			if int64(b) == -1 {
				return uint64(-int64(a))
			}
			return uint64(int64(a) / int64(b))
		}
		return a / b
	case aluMOD:
		switch {
		case b == 0:
			return a
		case signed:
			if int64(b) == -1 {
				return 0
			}
			return uint64(int64(a) % int64(b))
		}
		return a % b
	case aluOR:
		return a | b
	case aluAND:
		return a & b
	case aluXOR:
		return a ^ b
	case aluLSH:
		return a << (b & 63)
	case aluRSH:
		return a >> (b & 63)
	case aluARSH:
		return uint64(int64(a) >> (b & 63))
	case aluNEG:
		return -a
	case aluMOV:
		return b
	case aluEND: // ALU64 class: unconditional swap
		return endian(a, imm, true)
	}
	return 0
}

// endian is BPF_END: to little endian truncates (the host and the GPU are
// little endian), to big endian (or BSWAP) reverses the low imm bits.
func endian(a uint64, imm int64, swap bool) uint64 {
	switch imm {
	case 16:
		if swap {
			return uint64(bits.ReverseBytes16(uint16(a)))
		}
		return a & 0xffff
	case 32:
		if swap {
			return uint64(bits.ReverseBytes32(uint32(a)))
		}
		return a & 0xffffffff
	}
	if swap {
		return bits.ReverseBytes64(a)
	}
	return a
}

// movsx is MOVSX: sign-extend the low n bits of b (ALU: then zero-extend
// the 32-bit result).
func movsx(b uint64, n int16, is32 bool) uint64 {
	var r uint64
	switch n {
	case 8:
		r = uint64(int64(int8(b)))
	case 16:
		r = uint64(int64(int16(b)))
	default:
		r = uint64(int64(int32(b)))
	}
	if is32 {
		r &= math.MaxUint32
	}
	return r
}

// evalJump is the outcome of a conditional jump.
func evalJump(op uint8, a, b uint64, is32 bool) bool {
	if is32 {
		a, b = uint64(uint32(a)), uint64(uint32(b))
	}
	sa, sb := int64(a), int64(b)
	if is32 {
		sa, sb = int64(int32(a)), int64(int32(b))
	}
	switch op {
	case jmpJEQ:
		return a == b
	case jmpJNE:
		return a != b
	case jmpJGT:
		return a > b
	case jmpJGE:
		return a >= b
	case jmpJLT:
		return a < b
	case jmpJLE:
		return a <= b
	case jmpJSET:
		return a&b != 0
	case jmpJSGT:
		return sa > sb
	case jmpJSGE:
		return sa >= sb
	case jmpJSLT:
		return sa < sb
	case jmpJSLE:
		return sa <= sb
	}
	return false
}
