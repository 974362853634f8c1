//go:build cgo

package nvml

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/otelcol-gpu/otelcol-gpu/internal/fuzzseed"
)

// FuzzParseBusID: any PCI bus id spelling parses without a panic, and
// what parses reads back the same when printed in NVML's form.
// Seeds: testdata/fuzz/FuzzParseBusID.
func FuzzParseBusID(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseBusID(s)
		if !ok {
			return
		}
		again, ok := parseBusID(fmt.Sprintf("%08x:%02x:%02x.%x", v[0], v[1], v[2], v[3]))
		if !ok || again != v {
			t.Fatalf("%q -> %v, printed and parsed again -> %v %v", s, v, again, ok)
		}
	})
}

// FuzzRecordXID: whatever the Xid tracepoint says (the GPU's name, the
// code, the message) makes exactly one log record, naming the code, and
// counts one Xid on the GPU it names, if any, and nowhere else.
// Seeds: testdata/fuzz/FuzzRecordXID.
func FuzzRecordXID(f *testing.F) {
	f.Fuzz(func(t *testing.T, key string, xid uint32, pid uint32, msg string) {
		lib := newTwoGPUs()
		h := newHarness(t, lib, func(c *Config) { c.Events = false })
		h.start()
		counts := func() (n [2]float64) {
			got := points(h.scrape())
			for i, id := range []string{uuid0, uuid1} {
				n[i] = got[id+" hw.errors{error.type=xid}"]
			}
			return n
		}
		before := counts()
		h.src.RecordXID(key, uint64(xid), pid, msg)
		after := counts()
		want := before
		h.src.mu.Lock()
		d := h.src.findDevice(key)
		h.src.mu.Unlock()
		for i := range h.src.devices {
			if h.src.devices[i] == d {
				want[i]++
			}
		}
		if after != want {
			t.Fatalf("key %q: Xid counts %v -> %v, want %v", key, before, after, want)
		}
		r := h.nextLog()
		if !strings.HasPrefix(r.Body, "XID "+strconv.FormatUint(uint64(xid), 10)+": ") || r.Attributes["gpu.xid"] != int64(xid) {
			t.Fatalf("record %q %v for Xid %d", r.Body, r.Attributes["gpu.xid"], xid)
		}
	})
}

// FuzzFieldValues: whatever NVML puts in the field values (any type, any
// bytes, any per-field return) of memory temperature and the NVLink
// counters, scrapes never panic and hw.gpu.io{nvlink} is never negative
// nor goes down. The input is a run of 13-byte readings: value type (4),
// per-field return (1), value (8), one scrape each.
// Seeds: testdata/fuzz/FuzzFieldValues.
func FuzzFieldValues(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		lib := newTwoGPUs()
		g0 := lib.gpus[0]
		h := newHarness(t, lib, func(c *Config) { c.Events = false })
		h.start()
		const tx = uuid0 + " hw.gpu.io{gpu.io.link=nvlink,network.io.direction=transmit}"
		last := -1.0
		for ; len(b) >= 13; b = b[13:] {
			v := nvml.FieldValue{ValueType: binary.LittleEndian.Uint32(b), NvmlReturn: uint32(b[4])}
			copy(v.Value[:], b[5:13])
			g0.fields[nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX] = v
			g0.fields[nvml.FI_DEV_MEMORY_TEMP] = v
			h.clock.add(10 * time.Second)
			got := points(h.scrape())
			if n, ok := got[tx]; ok {
				if n < 0 || n < last {
					t.Fatalf("nvlink tx %v after %v", n, last)
				}
				last = n
			}
		}
	})
}

// TestWriteFuzzSeeds writes testdata/fuzz/FuzzParseBusID, FuzzRecordXID
// and FuzzFieldValues.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("NVML_WRITE_SEEDS") == "" {
		t.Skip("set NVML_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	write := func(target, name string, values ...any) {
		if err := fuzzseed.Write("", target, name, values...); err != nil {
			t.Fatal(err)
		}
	}
	for name, s := range map[string]string{
		"nvml": "00000000:17:00.0", "lspci": "0000:2a:00.0", "short": "17:00.0", "upper": "00000000:2A:00.0",
		"no_function": "0000:17:00", "too_many": "0:0:17:00.0", "not_hex": "0000:zz:00.0", "overflow": "100000000:17:00.0",
		"empty": "", "uuid": uuid0,
	} {
		write("FuzzParseBusID", name, s)
	}
	xid := func(name, key string, code, pid uint32, msg string) {
		write("FuzzRecordXID", name, key, code, pid, msg)
	}
	xid("bus_id", "0000:17:00.0", 79, 0, "GPU has fallen off the bus.")
	xid("uuid", uuid1, 31, 1234, "pid=1234, name=python3, Ch 00000008, intr 00000000. MMU Fault")
	xid("uuid_lowercase", strings.ToLower(uuid0), 48, 0, "An uncorrectable double bit error")
	xid("unknown_gpu", "0000:99:00.0", 13, 0, "Graphics Exception")
	xid("garbage", "\x00\xff:", 4294967295, 4294967295, "\x00")
	u64 := func(v uint64) []byte {
		b := binary.LittleEndian.AppendUint32(nil, uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG))
		b = append(b, byte(nvml.SUCCESS))
		return binary.LittleEndian.AppendUint64(b, v)
	}
	var steady, reset, absurd []byte
	for _, v := range []uint64{1000, 2000, 4000} {
		steady = append(steady, u64(v)...)
	}
	for _, v := range []uint64{1000, 5000, 10, 20} {
		reset = append(reset, u64(v)...)
	}
	for _, v := range []uint64{1000, ^uint64(0), 1 << 60, 1001} {
		absurd = append(absurd, u64(v)...)
	}
	double := binary.LittleEndian.AppendUint32(nil, uint32(nvml.VALUE_TYPE_DOUBLE))
	double = append(double, byte(nvml.SUCCESS))
	double = binary.LittleEndian.AppendUint64(double, 0x404e800000000000) // 61.0
	signed := binary.LittleEndian.AppendUint32(nil, uint32(nvml.VALUE_TYPE_SIGNED_LONG_LONG))
	signed = append(signed, byte(nvml.SUCCESS))
	signed = binary.LittleEndian.AppendUint64(signed, ^uint64(0)) // -1
	lost := binary.LittleEndian.AppendUint32(nil, uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG))
	lost = append(lost, byte(nvml.ERROR_GPU_IS_LOST))
	lost = binary.LittleEndian.AppendUint64(lost, 5)
	write("FuzzFieldValues", "steady", steady)
	write("FuzzFieldValues", "reset", reset)
	write("FuzzFieldValues", "absurd", absurd)
	write("FuzzFieldValues", "double_then_signed", append(append(u64(7), double...), signed...))
	write("FuzzFieldValues", "field_says_gpu_lost", append(u64(7), lost...))
}
