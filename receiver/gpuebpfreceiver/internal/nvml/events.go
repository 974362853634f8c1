//go:build cgo

package nvml

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml/internal/metadata"
)

// Sources of an XID, in the gpu.xid.source log attribute.
const (
	xidSourceNVML       = "nvml_event"
	xidSourceTracepoint = "tracepoint"
)

// noInstance is NVML's "not a MIG instance" in event data.
const noInstance = ^uint32(0)

// wantedEvents are the NVML event types the source listens to: the ones
// that say something is wrong. Clock and P-state changes are left out
// (frequent, and the scrape reports both).
const wantedEvents = nvml.EventTypeXidCriticalError |
	nvml.EventTypeDoubleBitEccError |
	nvml.EventTypeSingleBitEccErrorStorm |
	nvml.EventTypeDramRetirementEvent |
	nvml.EventTypeDramRetirementFailure |
	nvml.EventTypeNonFatalPoisonError |
	nvml.EventTypeFatalPoisonError |
	nvml.EventTypeGpuUnavailableError |
	nvml.EventTypeGpuRecoveryAction

type severity struct {
	number plog.SeverityNumber
	text   string
}

var (
	severityInfo  = severity{plog.SeverityNumberInfo, "INFO"}
	severityWarn  = severity{plog.SeverityNumberWarn, "WARN"}
	severityError = severity{plog.SeverityNumberError, "ERROR"}
)

// eventLog is one non-XID event as a log record.
type eventLog struct {
	name     string // gpu.nvml.event
	body     string
	severity severity
	state    hwState // what it says about the GPU; ok: nothing
	data     uint64
}

// nvmlEvents describes the non-XID event types.
var nvmlEvents = map[uint64]eventLog{
	nvml.EventTypeDoubleBitEccError:      {name: "ecc_double_bit", body: "Double-bit ECC error", severity: severityError, state: stateDegraded},
	nvml.EventTypeSingleBitEccErrorStorm: {name: "ecc_single_bit_storm", body: "Storm of single-bit ECC errors", severity: severityWarn, state: stateDegraded},
	nvml.EventTypeDramRetirementEvent:    {name: "dram_retirement", body: "Memory page retired or row remapped (takes effect at the next GPU reset)", severity: severityWarn, state: stateDegraded},
	nvml.EventTypeDramRetirementFailure:  {name: "dram_retirement_failure", body: "Memory page retirement or row remapping failed", severity: severityError, state: stateFailed},
	nvml.EventTypeNonFatalPoisonError:    {name: "poison_non_fatal", body: "Non-fatal poison error (contained to the affected applications)", severity: severityWarn, state: stateOK},
	nvml.EventTypeFatalPoisonError:       {name: "poison_fatal", body: "Fatal poison error", severity: severityError, state: stateFailed},
	nvml.EventTypeGpuUnavailableError:    {name: "gpu_unavailable", body: "GPU became unavailable", severity: severityError, state: stateFailed},
	nvml.EventTypeGpuRecoveryAction:      {name: "gpu_recovery_action", body: "GPU recovery action required", severity: severityWarn, state: stateDegraded},
}

// startEvents registers every GPU for the wanted events and starts the
// goroutine that waits for them. Without events the source still scrapes.
func (s *Source) startEvents() {
	set, ret := s.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		s.log.Warn("NVML events unavailable; XIDs are not reported from NVML", zap.String("nvml", ret.Error()))
		return
	}
	registered := 0
	for _, d := range s.devices {
		if d.lost {
			continue
		}
		supported, ret := d.handle.GetSupportedEventTypes()
		if ret != nvml.SUCCESS {
			s.log.Debug("NVML event types unavailable for GPU", zap.String("hw.id", d.id), zap.String("nvml", ret.Error()))
			continue
		}
		mask := supported & wantedEvents
		if mask == 0 {
			continue
		}
		if ret := d.handle.RegisterEvents(mask, set); ret != nvml.SUCCESS {
			s.log.Debug("NVML event registration failed for GPU", zap.String("hw.id", d.id), zap.String("nvml", ret.Error()))
			continue
		}
		registered++
	}
	if registered == 0 {
		set.Free()
		s.log.Warn("no GPU accepted NVML event registration; XIDs are not reported from NVML")
		return
	}
	s.eventSet = set
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
	go s.eventLoop(ctx, set)
}

// eventLoop waits on the event set until ctx ends. Each wait lasts at most
// the event timeout, which bounds how long Shutdown waits.
func (s *Source) eventLoop(ctx context.Context, set nvml.EventSet) {
	defer s.wg.Done()
	timeout := uint32(s.opts.eventTimeout / time.Millisecond)
	failures := 0
	for ctx.Err() == nil {
		data, ret := set.Wait(timeout)
		switch ret {
		case nvml.SUCCESS:
			failures = 0
			s.handleEvent(data)
		case nvml.ERROR_TIMEOUT:
			failures = 0
		default:
			// A GPU that fell off the bus makes every wait fail; the scrape
			// finds out which one. Back off so this loop does not spin.
			failures++
			if failures == 10 {
				s.log.Warn("waiting for NVML events keeps failing", zap.String("nvml", ret.Error()))
			}
			backoff := min(time.Duration(failures)*50*time.Millisecond, s.opts.eventTimeout)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
		}
	}
}

func (s *Source) handleEvent(data nvml.EventData) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logsClosed {
		return
	}
	d := s.deviceByHandle(data.Device)
	now := s.opts.now()
	if data.EventType == nvml.EventTypeXidCriticalError {
		s.xid(d, "", data.EventData, 0, "", xidSourceNVML, data.GpuInstanceId, data.ComputeInstanceId, now)
		return
	}
	ev, ok := nvmlEvents[data.EventType]
	if !ok {
		ev = eventLog{name: "event_" + strconv.FormatUint(data.EventType, 10), body: "NVML event", severity: severityInfo}
	}
	ev.data = data.EventData
	if d != nil && ev.state > stateOK && s.cfg.XIDStatusHold > 0 {
		d.hold(ev.state, ev.name, now.Add(s.cfg.XIDStatusHold), now)
	}
	s.emitEventLog(d, nil, ev, now)
}

// deviceByHandle finds the GPU an event is about; events name the handle,
// and a MIG device's handle leads to its parent.
func (s *Source) deviceByHandle(h nvml.Device) *device {
	if h == nil {
		return nil
	}
	for _, d := range s.devices {
		if sameHandle(d.handle, h) {
			return d
		}
	}
	if uuid, ret := h.GetUUID(); ret == nvml.SUCCESS {
		if d := s.findDevice(uuid); d != nil {
			return d
		}
		for _, d := range s.devices {
			if _, ok := d.migs[uuid]; ok {
				return d
			}
		}
	}
	return nil
}

// sameHandle compares two device handles without panicking on handle
// types that are not comparable.
func sameHandle(a, b nvml.Device) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// RecordXID reports an XID seen outside NVML (the nvidia:nvidia_dev_xid
// tracepoint) through the same path as NVML's XID events: a log record,
// hw.errors{error.type=xid} and hw.status. uuidOrBusID names the GPU by
// hw.id (GPU-…) or PCI bus id; pid is the process the driver blamed (0:
// none); msg is the driver's message, kept in gpu.xid.message. An XID that
// NVML also reported within 2 s is not counted twice.
func (s *Source) RecordXID(uuidOrBusID string, xid uint64, pid uint32, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logsClosed {
		return
	}
	d := s.findDevice(uuidOrBusID)
	s.xid(d, uuidOrBusID, xid, pid, msg, xidSourceTracepoint, noInstance, noInstance, s.opts.now())
}

// xid handles one XID on device d (nil when unknown; key then names it).
func (s *Source) xid(d *device, key string, xid uint64, pid uint32, msg, source string, gi, ci uint32, now time.Time) {
	info, _ := lookupXID(xid)
	if d != nil {
		if d.duplicateXID(xid, source, now) {
			return
		}
		d.xids++
		if info.State > stateOK && s.cfg.XIDStatusHold > 0 {
			d.hold(info.State, "xid_"+strconv.FormatUint(xid, 10), now.Add(s.cfg.XIDStatusHold), now)
		}
	}
	sev := severityWarn
	if info.State > stateOK {
		sev = severityError
	}
	// Neither NVML nor the tracepoint says which process faulted. The
	// processes running on the GPU at that moment are the suspects; when
	// there is exactly one, the record is attributed to it.
	suspects := s.runningPIDs(d)
	if pid == 0 && len(suspects) == 1 {
		pid = suspects[0]
	}
	logs := plog.NewLogs()
	rl := logs.ResourceLogs().AppendEmpty()
	s.eventResource(d, key, pid).MoveTo(rl.Resource())
	lr := s.newRecord(rl, now, sev, xidBody(xid, info))
	lr.SetEventName("gpu.xid")
	attrs := lr.Attributes()
	attrs.PutInt("gpu.xid", int64(xid))
	attrs.PutStr("gpu.xid.description", info.Description)
	attrs.PutStr("gpu.xid.source", source)
	attrs.PutStr("hw.state", info.State.String())
	if msg = strings.TrimSpace(msg); msg != "" {
		attrs.PutStr("gpu.xid.message", msg)
	}
	if len(suspects) > 0 {
		sl := attrs.PutEmptySlice("gpu.xid.gpu_processes")
		for _, p := range suspects {
			sl.AppendEmpty().SetInt(int64(p))
		}
	}
	putInstance(attrs, gi, ci)
	s.sendLogs(logs)
}

// runningPIDs lists the compute processes on d now (none when d is
// unknown, lost, or NVML cannot say).
func (s *Source) runningPIDs(d *device) []uint32 {
	if d == nil || d.lost || d.handle == nil {
		return nil
	}
	procs, ret := d.handle.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		return nil
	}
	pids := make([]uint32, 0, len(procs))
	for _, p := range procs {
		pids = append(pids, p.Pid)
	}
	return pids
}

// emitEventLog sends a non-XID event as a log record.
func (s *Source) emitEventLog(d *device, p *Process, ev eventLog, now time.Time) {
	logs := plog.NewLogs()
	rl := logs.ResourceLogs().AppendEmpty()
	var pid uint32
	if p != nil {
		pid = p.PID
	}
	s.eventResource(d, "", pid).MoveTo(rl.Resource())
	lr := s.newRecord(rl, now, ev.severity, ev.body)
	lr.SetEventName("gpu.nvml.event")
	attrs := lr.Attributes()
	attrs.PutStr("gpu.nvml.event", ev.name)
	attrs.PutStr("hw.state", ev.state.String())
	if ev.data != 0 {
		attrs.PutInt("gpu.nvml.event.data", int64(ev.data))
	}
	s.sendLogs(logs)
}

// eventResource is the resource of an event: its GPU (or, for an unknown
// GPU, what the reporter called it) and the process, if any.
func (s *Source) eventResource(d *device, key string, pid uint32) pcommon.Resource {
	var p *Process
	if pid != 0 {
		proc := s.attr.Attribute(pid)
		proc.PID = pid
		p = &proc
	}
	if d != nil {
		return s.resource(d, nil, p)
	}
	rb := s.rb
	rb.SetHostName(s.hostName)
	rb.SetHwType("gpu")
	rb.SetHwVendor("NVIDIA")
	if strings.HasPrefix(key, "GPU-") {
		rb.SetHwID(key)
	} else if _, ok := parseBusID(key); ok {
		rb.SetPciBusID(key)
	}
	if p != nil {
		setProcess(rb, p)
	}
	return rb.Emit()
}

func (s *Source) newRecord(rl plog.ResourceLogs, now time.Time, sev severity, body string) plog.LogRecord {
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(metadata.ScopeName)
	sl.Scope().SetVersion(s.set.BuildInfo.Version)
	lr := sl.LogRecords().AppendEmpty()
	ts := pcommon.NewTimestampFromTime(now)
	lr.SetTimestamp(ts)
	lr.SetObservedTimestamp(ts)
	lr.SetSeverityNumber(sev.number)
	lr.SetSeverityText(sev.text)
	lr.Body().SetStr(body)
	return lr
}

func putInstance(attrs pcommon.Map, gi, ci uint32) {
	if gi != noInstance {
		attrs.PutInt("gpu.mig.gpu_instance.id", int64(gi))
	}
	if ci != noInstance {
		attrs.PutInt("gpu.mig.compute_instance.id", int64(ci))
	}
}

// sendLogs hands logs to the Logs channel, or counts them as dropped when
// it is full. Called with s.mu held, so it never races the close.
func (s *Source) sendLogs(logs plog.Logs) {
	if s.logsClosed {
		return
	}
	select {
	case s.logs <- logs:
	default:
		s.dropped += int64(logs.LogRecordCount())
	}
}
