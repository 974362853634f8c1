package uvmtools

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// A fixture is what bench/device/uvm/capture records on a GPU machine:
// NAME.bin (or NAME.bin.gz), the raw queue entries in the order read, and
// NAME.json, a FixtureMeta saying how they were captured and what the traced
// program reported doing.

// FixtureFormat is the current FixtureMeta.Format.
const FixtureFormat = 1

// FixtureMeta describes a fixture.
type FixtureMeta struct {
	Format     int      `json:"format"`
	EntrySize  int      `json:"entry_size"`
	ABIVersion int      `json:"abi_version"`
	Driver     string   `json:"driver,omitempty"` // /proc/driver/nvidia/version, first line
	Kernel     string   `json:"kernel,omitempty"`
	Command    []string `json:"command"`
	PID        int      `json:"pid"`
	// AttachMS is the time from starting the program to the tracker being
	// attached; Attempts the Open calls it took.
	AttachMS      float64            `json:"attach_ms"`
	Attempts      int                `json:"attempts"`
	QueueEntries  uint32             `json:"queue_entries"`
	Entries       uint64             `json:"entries"`
	Dropped       uint64             `json:"dropped"`
	DroppedByType map[string]uint64  `json:"dropped_by_type,omitempty"`
	Processors    []FixtureProcessor `json:"processors"`
	Counters      *Counters          `json:"counters,omitempty"`
	// Program is the JSON line the traced program printed (managed.cu).
	Program json.RawMessage `json:"program,omitempty"`
	Summary Summary         `json:"summary"`
}

// FixtureProcessor is one processor table entry of a fixture.
type FixtureProcessor struct {
	Index  int    `json:"index"`
	UUID   string `json:"uuid"`
	HWID   string `json:"hw_id,omitempty"`
	MIG    bool   `json:"mig,omitempty"`
	Parent string `json:"parent,omitempty"`
}

// FixtureProcessors lists a table for FixtureMeta.
func FixtureProcessors(t ProcessorTable) []FixtureProcessor {
	var out []FixtureProcessor
	if c, ok := t.Lookup(CPU); ok {
		out = append(out, FixtureProcessor{Index: 0, UUID: c.UUID.String()})
	}
	for _, g := range t.GPUs() {
		f := FixtureProcessor{Index: int(g.Index), UUID: g.UUID.String(), HWID: g.HWID(), MIG: g.MIG}
		if g.MIG {
			f.Parent = g.Parent.String()
		}
		out = append(out, f)
	}
	return out
}

// LoadFixture reads binPath (NAME.bin or NAME.bin.gz) and its NAME.json.
func LoadFixture(binPath string) (FixtureMeta, []byte, error) {
	var meta FixtureMeta
	jsonPath := strings.TrimSuffix(strings.TrimSuffix(binPath, ".gz"), ".bin") + ".json"
	mb, err := os.ReadFile(jsonPath)
	if err != nil {
		return meta, nil, err
	}
	if err := json.Unmarshal(mb, &meta); err != nil {
		return meta, nil, fmt.Errorf("%s: %w", jsonPath, err)
	}
	raw, err := os.ReadFile(binPath)
	if err != nil {
		return meta, nil, err
	}
	if strings.HasSuffix(binPath, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return meta, nil, fmt.Errorf("%s: %w", binPath, err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return meta, nil, fmt.Errorf("%s: %w", binPath, err)
		}
	}
	if meta.Format != FixtureFormat {
		return meta, nil, fmt.Errorf("%s: format %d, want %d", jsonPath, meta.Format, FixtureFormat)
	}
	if meta.EntrySize != EntrySizeV1 && meta.EntrySize != EntrySizeV2 {
		return meta, nil, fmt.Errorf("%s: entry_size %d", jsonPath, meta.EntrySize)
	}
	if len(raw)%meta.EntrySize != 0 {
		return meta, nil, fmt.Errorf("%s: %d bytes is not a whole number of %d-byte entries", binPath, len(raw), meta.EntrySize)
	}
	return meta, raw, nil
}
