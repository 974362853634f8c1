//go:build cgo

package nvml

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"
)

// device is one GPU as NVML enumerated it at Start, with what the source
// remembers about it between scrapes.
type device struct {
	index  int
	handle nvml.Device
	id     string // hw.id: NVML's UUID, "GPU-…"; "" when it could not be read
	name   string // hw.name: "gpu<index>"
	model  string
	busID  string
	serial string
	vbios  string
	res    pcommon.Resource

	skip   fieldSet // NVML said no (not supported, no permission): not asked again
	logged fieldSet // transient failures already logged
	lost   bool     // GPU_IS_LOST or unusable handle: only hw.status is reported

	throttleMask uint64 // reasons the device supports; 0: unknown, report all

	// Conditions read at the last successful read of their field.
	remapPending   bool
	remapFailure   bool
	retiredPending bool

	// State held after an XID or critical event (see Config.XIDStatusHold).
	heldState  hwState
	heldReason string
	heldUntil  time.Time
	xids       int64
	recent     [8]xidSeen // recent XIDs, to merge one XID seen by two sources
	recentNext int

	pcie [2]integrator // transmit, receive
	// NVML's own cumulative counters, made monotonic across their resets.
	ecc          [2]counter // corrected, uncorrected (volatile)
	replay       counter    // PCIe replays
	nvlink       [2]counter // transmit, receive (KiB)
	energy       counter    // mJ
	procLastSeen uint64     // newest process-utilization sample consumed
	migs         map[string]*migDevice
}

// migDevice is a MIG device of a GPU in MIG mode, keyed by its UUID.
type migDevice struct {
	id           string // "MIG-…"
	name         string // "gpu<index>/mig<n>"
	model        string
	gpuInstance  int
	compInstance int
	sms          uint32
	smsOK        bool
	res          pcommon.Resource
	skip         fieldSet
	logged       fieldSet
	procLastSeen uint64
	seen         uint64 // scrape generation it was last enumerated in
}

type xidSeen struct {
	xid    uint64
	source string
	at     time.Time
}

// integrator turns a rate sampled at each scrape into a cumulative count
// (trapezoid rule between consecutive samples).
type integrator struct {
	total float64
	rate  float64 // bytes/s at the previous sample
	at    time.Time
}

func (in *integrator) add(rate float64, now time.Time) {
	if !in.at.IsZero() {
		if dt := now.Sub(in.at).Seconds(); dt > 0 {
			in.total += (in.rate + rate) / 2 * dt
		}
	}
	in.rate, in.at = rate, now
}

// counter turns one of NVML's cumulative counters into the value of a
// cumulative series that keeps its start time: the driver's counters go
// back to zero while the collector runs (nvidia-smi -p 0 clears the
// volatile ECC counts, a GPU reset the volatile counters), and a drop is
// taken as such a reset, counted from zero on top of what was reported.
type counter struct {
	base, last uint64
	seen       bool
}

// maxCount is the largest count a point can carry (an int64 data point).
const maxCount = math.MaxInt64

// add takes the counter's value now and returns the series' value; ok is
// false for a value no counter holds (≥ 2^63: NVML's "not available" ~0,
// garbage), which is skipped.
func (c *counter) add(v uint64) (uint64, bool) {
	if v > maxCount {
		return 0, false
	}
	if c.seen && v < c.last {
		c.base += c.last
	}
	c.last, c.seen = v, true
	if c.base > maxCount-v {
		return maxCount, true
	}
	return c.base + v, true
}

// discover reads the identity of GPU i; nil when this process may not use it.
func (s *Source) discover(i int) *device {
	d := &device{index: i, name: "gpu" + strconv.Itoa(i), migs: map[string]*migDevice{}}
	h, ret := s.lib.DeviceGetHandleByIndex(i)
	switch classify(ret) {
	case outcomeOK:
		d.handle = h
	case outcomeLost:
		d.lost = true
	default:
		s.log.Info("GPU not accessible through NVML; skipped", zap.Int("index", i), zap.String("nvml", ret.Error()))
		return nil
	}
	if !d.lost {
		uuid, ret := h.GetUUID()
		switch classify(ret) {
		case outcomeOK:
			d.id = uuid
		case outcomeLost:
			d.lost = true
		}
	}
	if !d.lost {
		if v, ret := h.GetName(); ret == nvml.SUCCESS {
			d.model = v
		}
		if p, ret := h.GetPciInfo(); ret == nvml.SUCCESS {
			d.busID = cString(p.BusId[:])
		}
		ra := &s.cfg.ResourceAttributes
		if ra.HwSerialNumber.Enabled {
			if v, ret := h.GetSerial(); ret == nvml.SUCCESS {
				d.serial = v
			}
		}
		if ra.HwFirmwareVersion.Enabled {
			if v, ret := h.GetVbiosVersion(); ret == nvml.SUCCESS {
				d.vbios = v
			}
		}
		if s.active.has(fClockEvents) {
			if m, ret := h.GetSupportedClocksEventReasons(); ret == nvml.SUCCESS {
				d.throttleMask = m
			}
		} else if s.active.has(fClockEventsLegacy) {
			if m, ret := h.GetSupportedClocksThrottleReasons(); ret == nvml.SUCCESS {
				d.throttleMask = m
			}
		}
	}
	if d.lost {
		s.log.Warn("GPU is lost; reported as failed", zap.Int("index", i), zap.String("hw.id", d.id))
	}
	d.res = s.resource(d, nil, nil)
	return d
}

// resource builds the resource of a GPU, of one of its MIG devices (m),
// or of a process on either (p), honouring resource_attributes.
func (s *Source) resource(d *device, m *migDevice, p *Process) pcommon.Resource {
	rb := s.rb
	rb.SetHostName(s.hostName)
	rb.SetHwType("gpu")
	rb.SetHwVendor("NVIDIA")
	if s.driver != "" {
		rb.SetHwDriverVersion(s.driver)
	}
	if d.busID != "" {
		rb.SetPciBusID(d.busID)
	}
	if m == nil {
		if d.id != "" {
			rb.SetHwID(d.id)
		}
		rb.SetHwName(d.name)
		if d.model != "" {
			rb.SetHwModel(d.model)
		}
		if d.serial != "" {
			rb.SetHwSerialNumber(d.serial)
		}
		if d.vbios != "" {
			rb.SetHwFirmwareVersion(d.vbios)
		}
	} else {
		rb.SetHwID(m.id)
		rb.SetHwName(m.name)
		if d.id != "" {
			rb.SetHwParent(d.id)
		}
		if m.model != "" {
			rb.SetHwModel(m.model)
		}
		rb.SetGpuMigGpuInstanceID(int64(m.gpuInstance))
		rb.SetGpuMigComputeInstanceID(int64(m.compInstance))
	}
	if p != nil {
		setProcess(rb, p)
	}
	return rb.Emit()
}

// markLost records that the device is gone; it is reported as failed from
// now on and not read again.
func (s *Source) markLost(d *device, ret nvml.Return) {
	if d.lost {
		return
	}
	d.lost = true
	s.log.Warn("GPU is lost; reported as failed and no longer read",
		zap.String("hw.id", d.id), zap.String("hw.name", d.name), zap.String("nvml", ret.Error()))
	s.emitEventLog(d, nil, eventLog{
		name:     "gpu_lost",
		body:     "GPU is lost (" + ret.Error() + ")",
		severity: severityError,
		state:    stateFailed,
	}, s.opts.now())
}

// status is the device's hw.status and why.
func (d *device) status(now time.Time) (hwState, string) {
	state, reason := stateOK, "none"
	raise := func(st hwState, r string) {
		if st > state {
			state, reason = st, r
		}
	}
	if d.lost {
		raise(stateFailed, "gpu_lost")
	}
	if d.remapFailure {
		raise(stateFailed, "remapped_rows_failure")
	}
	if d.heldState > stateOK && now.Before(d.heldUntil) {
		raise(d.heldState, d.heldReason)
	}
	if d.remapPending {
		raise(stateDegraded, "remapped_rows_pending")
	}
	if d.retiredPending {
		raise(stateDegraded, "retired_pages_pending")
	}
	return state, reason
}

// hold keeps the device at state (or worse) until until.
func (d *device) hold(state hwState, reason string, until time.Time, now time.Time) {
	if d.heldState > state && now.Before(d.heldUntil) {
		return
	}
	d.heldState, d.heldReason, d.heldUntil = state, reason, until
}

// duplicateXID reports whether xid was just seen from another source (the
// NVML event and the kernel tracepoint both report every XID), and
// remembers this sighting otherwise.
func (d *device) duplicateXID(xid uint64, source string, now time.Time) bool {
	const window = 2 * time.Second
	for _, r := range d.recent {
		if r.xid == xid && r.source != source && !r.at.IsZero() {
			if dt := now.Sub(r.at); dt < window && dt > -window {
				return true
			}
		}
	}
	d.recent[d.recentNext] = xidSeen{xid: xid, source: source, at: now}
	d.recentNext = (d.recentNext + 1) % len(d.recent)
	return false
}

// findDevice finds a GPU by hw.id (GPU-uuid) or PCI bus id in any of the
// usual spellings (00000000:17:00.0, 0000:17:00.0, 17:00.0).
func (s *Source) findDevice(key string) *device {
	key = strings.TrimSpace(key)
	if key == "" {
		return nil
	}
	for _, d := range s.devices {
		if d.id != "" && strings.EqualFold(d.id, key) {
			return d
		}
	}
	want, ok := parseBusID(key)
	if !ok {
		return nil
	}
	for _, d := range s.devices {
		if got, ok := parseBusID(d.busID); ok && got == want {
			return d
		}
	}
	return nil
}

// parseBusID parses [domain:]bus:device.function (hex).
func parseBusID(s string) ([4]uint64, bool) {
	var out [4]uint64
	parts := strings.Split(s, ":")
	if len(parts) == 2 {
		parts = append([]string{"0"}, parts...)
	}
	if len(parts) != 3 {
		return out, false
	}
	devFn := strings.Split(parts[2], ".")
	if len(devFn) != 2 {
		return out, false
	}
	for i, p := range []string{parts[0], parts[1], devFn[0], devFn[1]} {
		v, err := strconv.ParseUint(p, 16, 32)
		if err != nil {
			return out, false
		}
		out[i] = v
	}
	return out, true
}

// cString converts a NUL-terminated byte array.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
