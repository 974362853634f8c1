//go:build cgo

package nvml

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml/internal/metadata"
)

// kib is NVML's "KB": the PCIe throughput (KB/s) and NVLink counters (KiB)
// are in units of 1024 bytes.
const kib = 1024

// maxMIGDevices bounds the MIG slots read per GPU (7 on an H100 or H200):
// a count no GPU has must not hold a scrape in billions of NVML calls.
const maxMIGDevices = 64

// notAvailable is NVML_VALUE_NOT_AVAILABLE as an unsigned long long, what
// NVML puts in usedGpuMemory when it cannot tell.
const notAvailable = math.MaxUint64

// scratch is reused from scrape to scrape.
type scratch struct {
	gen  uint64
	fv   []nvml.FieldValue
	agg  map[uint32]procAgg
	pids []uint32
	seen map[uint32]struct{}
}

// procAgg sums one process's utilization samples: sm, memory, encoder,
// decoder percent.
type procAgg struct {
	sum [4]uint64
	n   uint64
}

var engines = [4]metadata.AttributeEngine{
	metadata.AttributeEngineSm, metadata.AttributeEngineMemory,
	metadata.AttributeEngineEncoder, metadata.AttributeEngineDecoder,
}

// unit is what processes run on: a GPU, or a MIG device of a GPU in MIG
// mode.
type unit struct {
	handle   nvml.Device
	mig      *migDevice // nil for the GPU itself
	skip     *fieldSet
	logged   *fieldSet
	lastSeen *uint64
}

// Scrape reads every GPU once. A field that fails is left out, a device
// that fails is reported through hw.status; neither fails the scrape.
// Before a successful Start, or after Finish or Shutdown began, it returns
// no metrics (Finish's are the last).
func (s *Source) Scrape(ctx context.Context) (pmetric.Metrics, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mb == nil || s.stopped {
		return pmetric.NewMetrics(), nil
	}
	return s.scrapeLocked(ctx), ctx.Err()
}

// lastScrape is Finish's scrape: the source is stopped, NVML not yet
// released.
func (s *Source) lastScrape(ctx context.Context) pmetric.Metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mb == nil || !s.initialized || ctx.Err() != nil {
		return pmetric.NewMetrics()
	}
	return s.scrapeLocked(ctx)
}

// scrapeLocked is Scrape's work. The caller holds s.mu.
func (s *Source) scrapeLocked(ctx context.Context) pmetric.Metrics {
	now := s.opts.now()
	ts := pcommon.NewTimestampFromTime(now)
	s.scratch.gen++
	for _, d := range s.devices {
		if ctx.Err() != nil {
			break
		}
		s.scrapeDevice(d, now, ts)
	}
	if s.cfg.Metrics.GpuNvmlLogRecordsDropped.Enabled {
		s.mb.RecordGpuNvmlLogRecordsDroppedDataPoint(ts, s.dropped)
		s.mb.EmitForResource(metadata.WithResource(s.hostRes))
	}
	return s.mb.Emit()
}

// scrapeDevice records one GPU, its MIG devices and its processes. A panic
// (a bug, or a mock missing a method) costs this device's scrape, not the
// collector.
func (s *Source) scrapeDevice(d *device, now time.Time, ts pcommon.Timestamp) {
	defer func() {
		if r := recover(); r != nil {
			s.panics++
			s.log.Error("panic while reading GPU; its data for this scrape is incomplete",
				zap.String("hw.id", d.id), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			s.mb.EmitForResource(metadata.WithResource(d.res))
		}
	}()
	if !d.lost {
		s.readGPU(d, now, ts)
	}
	s.recordStatus(d, now, ts)
	s.mb.EmitForResource(metadata.WithResource(d.res))
	if d.lost {
		return
	}
	units := s.readMIG(d, ts)
	if s.active.has(fProcesses) {
		for i := range units {
			s.readProcesses(d, &units[i], ts)
		}
	}
}

// want reports whether field f should be read from d now.
func (s *Source) want(d *device, skip fieldSet, f field) bool {
	return !d.lost && s.active.has(f) && !skip.has(f)
}

// ok reports whether ret is success. Otherwise an unsupported field is
// remembered in skip (and logged once at debug), a lost device is marked,
// and a transient failure is logged once per field at debug.
func (s *Source) ok(d *device, skip, logged *fieldSet, f field, ret nvml.Return) bool {
	switch classify(ret) {
	case outcomeOK:
		return true
	case outcomeUnsupported:
		skip.add(f)
		s.log.Debug("NVML field unavailable on this device; not read again",
			zap.String("hw.id", d.id), zap.Stringer("field", f), zap.String("nvml", ret.Error()))
	case outcomeLost:
		s.markLost(d, ret)
	default:
		if !logged.has(f) {
			logged.add(f)
			s.log.Debug("NVML field read failed; retried next scrape (logged once)",
				zap.String("hw.id", d.id), zap.Stringer("field", f), zap.String("nvml", ret.Error()))
		}
	}
	return false
}

func (s *Source) readGPU(d *device, now time.Time, ts pcommon.Timestamp) {
	h := d.handle
	m := &s.cfg.Metrics
	mb := s.mb
	want := func(f field) bool { return s.want(d, d.skip, f) }
	ok := func(f field, ret nvml.Return) bool { return s.ok(d, &d.skip, &d.logged, f, ret) }

	if want(fUtilization) {
		if u, ret := h.GetUtilizationRates(); ok(fUtilization, ret) {
			if m.HwGpuUtilization.Enabled {
				mb.RecordHwGpuUtilizationDataPoint(ts, percent(u.Gpu), metadata.AttributeTaskGeneral)
			}
			if m.GpuMemoryControllerUtilization.Enabled {
				mb.RecordGpuMemoryControllerUtilizationDataPoint(ts, percent(u.Memory))
			}
		}
	}
	if want(fEncoder) {
		if u, _, ret := h.GetEncoderUtilization(); ok(fEncoder, ret) {
			mb.RecordHwGpuUtilizationDataPoint(ts, percent(u), metadata.AttributeTaskEncoder)
		}
	}
	if want(fDecoder) {
		if u, _, ret := h.GetDecoderUtilization(); ok(fDecoder, ret) {
			mb.RecordHwGpuUtilizationDataPoint(ts, percent(u), metadata.AttributeTaskDecoder)
		}
	}
	if used, total, got := s.readMemory(d, h, &d.skip, &d.logged); got {
		if m.HwGpuMemoryUsage.Enabled {
			mb.RecordHwGpuMemoryUsageDataPoint(ts, int64(used))
		}
		if m.HwGpuMemoryLimit.Enabled {
			mb.RecordHwGpuMemoryLimitDataPoint(ts, int64(total))
		}
		if m.HwGpuMemoryUtilization.Enabled && total > 0 {
			mb.RecordHwGpuMemoryUtilizationDataPoint(ts, float64(used)/float64(total))
		}
	}
	if want(fPower) {
		if mw, ret := h.GetPowerUsage(); ok(fPower, ret) {
			mb.RecordHwPowerDataPoint(ts, float64(mw)/1000)
		}
	}
	if want(fEnergy) {
		if mj, ret := h.GetTotalEnergyConsumption(); ok(fEnergy, ret) {
			if mj, ok := d.energy.add(mj); ok {
				mb.RecordHwEnergyDataPoint(ts, float64(mj)/1000)
			}
		}
	}
	if want(fTemperature) {
		if c, ret := h.GetTemperature(nvml.TEMPERATURE_GPU); ok(fTemperature, ret) {
			mb.RecordHwTemperatureDataPoint(ts, float64(c), metadata.AttributeSensorLocationGpu)
		}
	}
	for _, c := range clockFields {
		if want(c.f) {
			if mhz, ret := h.GetClockInfo(c.clock); ok(c.f, ret) {
				mb.RecordGpuClockFrequencyDataPoint(ts, int64(mhz)*1_000_000, c.attr)
			}
		}
	}
	s.readThrottle(d, ts)
	if want(fPState) {
		if p, ret := h.GetPerformanceState(); ok(fPState, ret) && p <= nvml.PSTATE_15 {
			mb.RecordGpuPerformanceStateDataPoint(ts, int64(p))
		}
	}
	if want(fFan) {
		if pct, ret := h.GetFanSpeed(); ok(fFan, ret) {
			mb.RecordGpuFanSpeedDataPoint(ts, percent(pct))
		}
	}
	s.readErrors(d, ts)
	s.readIO(d, now, ts)
	s.readFieldValues(d, ts)
}

// readMemory reads used and total device memory: the v2 call where the
// driver has it (it leaves driver-reserved memory out of "used", as
// nvidia-smi does), else v1.
func (s *Source) readMemory(d *device, h nvml.Device, skip, logged *fieldSet) (used, total uint64, got bool) {
	if s.want(d, *skip, fMemoryV2) {
		mem, ret := h.GetMemoryInfo_v2()
		if s.ok(d, skip, logged, fMemoryV2, ret) {
			return mem.Used, mem.Total, true
		}
		if !skip.has(fMemoryV2) { // transient: no fallback, v1 counts differently
			return 0, 0, false
		}
	}
	if s.want(d, *skip, fMemory) {
		mem, ret := h.GetMemoryInfo()
		if s.ok(d, skip, logged, fMemory, ret) {
			return mem.Used, mem.Total, true
		}
	}
	return 0, 0, false
}

func (s *Source) readThrottle(d *device, ts pcommon.Timestamp) {
	var (
		reasons uint64
		got     bool
	)
	if s.want(d, d.skip, fClockEvents) {
		r, ret := d.handle.GetCurrentClocksEventReasons()
		got = s.ok(d, &d.skip, &d.logged, fClockEvents, ret)
		reasons = r
		if !got && !d.skip.has(fClockEvents) {
			return
		}
	}
	if !got && s.want(d, d.skip, fClockEventsLegacy) {
		r, ret := d.handle.GetCurrentClocksThrottleReasons()
		got = s.ok(d, &d.skip, &d.logged, fClockEventsLegacy, ret)
		reasons = r
	}
	if !got {
		return
	}
	for _, tr := range throttleReasons {
		if d.throttleMask != 0 && d.throttleMask&tr.bit == 0 {
			continue
		}
		var v int64
		if reasons&tr.bit != 0 {
			v = 1
		}
		s.mb.RecordGpuThrottleReasonsDataPoint(ts, v, tr.attr)
	}
}

func (s *Source) readErrors(d *device, ts pcommon.Timestamp) {
	h := d.handle
	mb := s.mb
	want := func(f field) bool { return s.want(d, d.skip, f) }
	ok := func(f field, ret nvml.Return) bool { return s.ok(d, &d.skip, &d.logged, f, ret) }
	errorsOn := s.cfg.Metrics.HwErrors.Enabled

	if want(fECCCorrected) {
		if n, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC); ok(fECCCorrected, ret) {
			if n, ok := d.ecc[0].add(n); ok {
				mb.RecordHwErrorsDataPoint(ts, int64(n), metadata.AttributeErrorTypeEccCorrected)
			}
		}
	}
	if want(fECCUncorrected) {
		if n, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); ok(fECCUncorrected, ret) {
			if n, ok := d.ecc[1].add(n); ok {
				mb.RecordHwErrorsDataPoint(ts, int64(n), metadata.AttributeErrorTypeEccUncorrected)
			}
		}
	}
	if want(fRetiredSingleBit) {
		if pages, ret := h.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS); ok(fRetiredSingleBit, ret) {
			mb.RecordHwErrorsDataPoint(ts, int64(len(pages)), metadata.AttributeErrorTypeRetiredPagesSingleBit)
		}
	}
	if want(fRetiredDoubleBit) {
		if pages, ret := h.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR); ok(fRetiredDoubleBit, ret) {
			mb.RecordHwErrorsDataPoint(ts, int64(len(pages)), metadata.AttributeErrorTypeRetiredPagesDoubleBit)
		}
	}
	if want(fRetiredPending) {
		if st, ret := h.GetRetiredPagesPendingStatus(); ok(fRetiredPending, ret) {
			d.retiredPending = st == nvml.FEATURE_ENABLED
		}
	}
	if want(fRemappedRows) {
		if corr, unc, pending, failed, ret := h.GetRemappedRows(); ok(fRemappedRows, ret) {
			d.remapPending, d.remapFailure = pending, failed
			if errorsOn {
				mb.RecordHwErrorsDataPoint(ts, int64(corr), metadata.AttributeErrorTypeRemappedRowsCorrectable)
				mb.RecordHwErrorsDataPoint(ts, int64(unc), metadata.AttributeErrorTypeRemappedRowsUncorrectable)
			}
		}
	}
	if want(fPCIeReplay) {
		if n, ret := h.GetPcieReplayCounter(); ok(fPCIeReplay, ret) && n >= 0 {
			if n, ok := d.replay.add(uint64(n)); ok {
				mb.RecordHwErrorsDataPoint(ts, int64(n), metadata.AttributeErrorTypePcieReplay)
			}
		}
	}
}

// readIO records PCIe bytes, integrated from NVML's throughput samples:
// each scrape samples the rate (NVML measures it over 20 ms) and adds the
// trapezoid between this sample and the previous one. The first scrape
// reports 0. It is an estimate: traffic in bursts shorter than the scrape
// interval is sampled, not counted.
func (s *Source) readIO(d *device, now time.Time, ts pcommon.Timestamp) {
	dirs := [2]struct {
		f       field
		counter nvml.PcieUtilCounter
		attr    metadata.AttributeDirection
	}{
		{fPCIeTx, nvml.PCIE_UTIL_TX_BYTES, metadata.AttributeDirectionTransmit},
		{fPCIeRx, nvml.PCIE_UTIL_RX_BYTES, metadata.AttributeDirectionReceive},
	}
	for i, dir := range dirs {
		if !s.want(d, d.skip, dir.f) {
			continue
		}
		if kbps, ret := d.handle.GetPcieThroughput(dir.counter); s.ok(d, &d.skip, &d.logged, dir.f, ret) {
			d.pcie[i].add(float64(kbps)*kib, now)
			s.mb.RecordHwGpuIoDataPoint(ts, int64(d.pcie[i].total), dir.attr, metadata.AttributeLinkPcie)
		}
	}
}

// readFieldValues reads memory temperature and the NVLink data counters in
// one call. NVLink counters are NVML's own cumulative KiB totals over all
// links (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX, scope UINT_MAX):
// payload only, since the driver loaded.
func (s *Source) readFieldValues(d *device, ts pcommon.Timestamp) {
	if !s.want(d, d.skip, fFieldValues) {
		return
	}
	fv := s.scratch.fv[:0]
	for _, id := range fieldValueIDs {
		if s.want(d, d.skip, id.f) {
			fv = append(fv, nvml.FieldValue{FieldId: id.id, ScopeId: id.scope})
		}
	}
	s.scratch.fv = fv
	if len(fv) == 0 {
		return
	}
	if !s.ok(d, &d.skip, &d.logged, fFieldValues, d.handle.GetFieldValues(fv)) {
		return
	}
	for i := range fv {
		v := &fv[i]
		var f field
		for _, id := range fieldValueIDs {
			if id.id == v.FieldId {
				f = id.f
			}
		}
		if !s.ok(d, &d.skip, &d.logged, f, nvml.Return(v.NvmlReturn)) {
			continue
		}
		switch f {
		case fMemoryTemp:
			if c, ok := fieldFloat(v); ok {
				s.mb.RecordHwTemperatureDataPoint(ts, c, metadata.AttributeSensorLocationMemory)
			}
		case fNVLinkTx, fNVLinkRx:
			n, ok := fieldUint64(v)
			if !ok || n > maxCount/kib {
				continue // not a byte count: 2^53 KiB and more
			}
			dir, c := metadata.AttributeDirectionTransmit, &d.nvlink[0]
			if f == fNVLinkRx {
				dir, c = metadata.AttributeDirectionReceive, &d.nvlink[1]
			}
			if n, ok = c.add(n); ok {
				s.mb.RecordHwGpuIoDataPoint(ts, int64(min(n, maxCount/kib)*kib), dir, metadata.AttributeLinkNvlink)
			}
		}
	}
}

// recordStatus records hw.status (one point per state, 1 on the current
// one) and the XID count.
func (s *Source) recordStatus(d *device, now time.Time, ts pcommon.Timestamp) {
	if s.cfg.Metrics.HwStatus.Enabled {
		state, reason := d.status(now)
		for _, st := range [...]struct {
			state hwState
			attr  metadata.AttributeState
		}{{stateOK, metadata.AttributeStateOk}, {stateDegraded, metadata.AttributeStateDegraded}, {stateFailed, metadata.AttributeStateFailed}} {
			var v int64
			if st.state == state {
				v = 1
			}
			s.mb.RecordHwStatusDataPoint(ts, v, st.attr, reason)
		}
	}
	if s.cfg.Metrics.HwErrors.Enabled {
		s.mb.RecordHwErrorsDataPoint(ts, d.xids, metadata.AttributeErrorTypeXid)
	}
}

// readMIG records the MIG devices of a GPU in MIG mode and returns what
// processes run on: the MIG devices, or the GPU itself.
func (s *Source) readMIG(d *device, ts pcommon.Timestamp) []unit {
	gpu := []unit{{handle: d.handle, skip: &d.skip, logged: &d.logged, lastSeen: &d.procLastSeen}}
	if !s.want(d, d.skip, fMIGMode) {
		return gpu
	}
	cur, _, ret := d.handle.GetMigMode()
	if !s.ok(d, &d.skip, &d.logged, fMIGMode, ret) || cur != nvml.DEVICE_MIG_ENABLE {
		clear(d.migs)
		return gpu
	}
	if !s.want(d, d.skip, fMIGDevices) {
		return nil
	}
	n, ret := d.handle.GetMaxMigDeviceCount()
	if !s.ok(d, &d.skip, &d.logged, fMIGDevices, ret) {
		return nil
	}
	n = min(n, maxMIGDevices) // each slot is an NVML call, under s.mu
	m := &s.cfg.Metrics
	var units []unit
	for i := 0; i < n; i++ {
		mh, ret := d.handle.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // an empty slot
		}
		if ret != nvml.SUCCESS {
			if classify(ret) == outcomeLost {
				s.markLost(d, ret)
				return nil
			}
			continue
		}
		uuid, ret := mh.GetUUID()
		if ret != nvml.SUCCESS {
			continue
		}
		mig := d.migs[uuid]
		if mig == nil {
			mig = s.discoverMIG(d, mh, uuid, i)
			d.migs[uuid] = mig
		}
		mig.seen = s.scratch.gen
		if m.GpuMigMemoryUsage.Enabled || m.GpuMigMemoryLimit.Enabled {
			if used, total, got := s.readMemory(d, mh, &mig.skip, &mig.logged); got {
				if m.GpuMigMemoryUsage.Enabled {
					s.mb.RecordGpuMigMemoryUsageDataPoint(ts, int64(used))
				}
				if m.GpuMigMemoryLimit.Enabled {
					s.mb.RecordGpuMigMemoryLimitDataPoint(ts, int64(total))
				}
			}
		}
		if m.GpuMigMultiprocessorCount.Enabled && mig.smsOK {
			s.mb.RecordGpuMigMultiprocessorCountDataPoint(ts, int64(mig.sms))
		}
		s.mb.EmitForResource(metadata.WithResource(mig.res))
		units = append(units, unit{handle: mh, mig: mig, skip: &mig.skip, logged: &mig.logged, lastSeen: &mig.procLastSeen})
	}
	for id, mig := range d.migs {
		if mig.seen != s.scratch.gen {
			delete(d.migs, id)
		}
	}
	return units
}

func (s *Source) discoverMIG(d *device, h nvml.Device, uuid string, i int) *migDevice {
	m := &migDevice{id: uuid, name: fmt.Sprintf("%s/mig%d", d.name, i), gpuInstance: -1, compInstance: -1}
	if v, ret := h.GetName(); ret == nvml.SUCCESS {
		m.model = v
	}
	if v, ret := h.GetGpuInstanceId(); ret == nvml.SUCCESS {
		m.gpuInstance = v
	}
	if v, ret := h.GetComputeInstanceId(); ret == nvml.SUCCESS {
		m.compInstance = v
	}
	if s.cfg.Metrics.GpuMigMultiprocessorCount.Enabled {
		if a, ret := h.GetAttributes(); ret == nvml.SUCCESS {
			m.sms, m.smsOK = a.MultiprocessorCount, true
		}
	}
	m.res = s.resource(d, m, nil)
	return m
}

// readProcesses records memory and utilization of the processes on one
// unit, each on a resource naming both the unit and the process.
//
// Utilization samples are consumed once: NVML is asked only for samples
// newer than the newest one already seen. A process's value is the mean
// of its samples since the previous scrape; a running process without a
// sample in that interval was idle and reports 0.
func (s *Source) readProcesses(d *device, u *unit, ts pcommon.Timestamp) {
	m := &s.cfg.Metrics
	var procs []nvml.ProcessInfo
	if s.want(d, *u.skip, fProcesses) {
		p, ret := u.handle.GetComputeRunningProcesses()
		if s.ok(d, u.skip, u.logged, fProcesses, ret) {
			procs = p
		}
	}
	if d.lost {
		return
	}
	if s.scratch.agg == nil {
		s.scratch.agg = map[uint32]procAgg{}
		s.scratch.seen = map[uint32]struct{}{}
	}
	agg, seen := s.scratch.agg, s.scratch.seen
	clear(agg)
	clear(seen)
	utilOK := false
	if s.want(d, *u.skip, fProcessUtil) {
		samples, ret := u.handle.GetProcessUtilization(*u.lastSeen)
		switch ret {
		case nvml.SUCCESS, nvml.ERROR_NOT_FOUND: // NOT_FOUND: no sample newer than lastSeen
			utilOK = true
		default:
			s.ok(d, u.skip, u.logged, fProcessUtil, ret)
		}
		newest := *u.lastSeen
		for _, smp := range samples {
			if smp.TimeStamp <= *u.lastSeen {
				continue // already counted
			}
			newest = max(newest, smp.TimeStamp)
			a := agg[smp.Pid]
			a.sum[0] += uint64(smp.SmUtil)
			a.sum[1] += uint64(smp.MemUtil)
			a.sum[2] += uint64(smp.EncUtil)
			a.sum[3] += uint64(smp.DecUtil)
			a.n++
			agg[smp.Pid] = a
		}
		*u.lastSeen = newest
	}
	if d.lost {
		return
	}
	utilOn := utilOK && m.GpuProcessUtilization.Enabled
	record := func(pid uint32, mem uint64, hasMem bool) {
		if hasMem && m.GpuProcessMemoryUsage.Enabled && mem != notAvailable {
			s.mb.RecordGpuProcessMemoryUsageDataPoint(ts, int64(mem))
		}
		if utilOn {
			a := agg[pid]
			for e, attr := range engines {
				var v float64
				if a.n > 0 {
					v = float64(a.sum[e]) / float64(a.n) / 100
				}
				s.mb.RecordGpuProcessUtilizationDataPoint(ts, v, attr)
			}
		}
		p := s.attr.Attribute(pid)
		p.PID = pid
		s.mb.EmitForResource(metadata.WithResource(s.resource(d, u.mig, &p)))
	}
	for _, p := range procs {
		if _, dup := seen[p.Pid]; dup || p.Pid == 0 {
			continue
		}
		seen[p.Pid] = struct{}{}
		record(p.Pid, p.UsedGpuMemory, true)
	}
	if !utilOn {
		return
	}
	// Processes with samples but not in the compute list (graphics
	// processes, or ones that just exited).
	pids := s.scratch.pids[:0]
	for pid := range agg {
		if _, done := seen[pid]; !done && pid != 0 {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	s.scratch.pids = pids
	for _, pid := range pids {
		record(pid, 0, false)
	}
}

func setProcess(rb *metadata.ResourceBuilder, p *Process) {
	if p.PID != 0 {
		rb.SetProcessPid(int64(p.PID))
	}
	if p.ExecutableName != "" {
		rb.SetProcessExecutableName(p.ExecutableName)
	}
	if p.ContainerID != "" {
		rb.SetContainerID(p.ContainerID)
	}
	if p.PodUID != "" {
		rb.SetK8sPodUID(p.PodUID)
	}
}

func percent(v uint32) float64 { return float64(v) / 100 }
