//go:build cgo

package nvml

import (
	"encoding/binary"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml/internal/metadata"
)

// field is one thing read from NVML per device per scrape. A device
// remembers the fields NVML said it does not support (or may not be read),
// so they are not asked again.
type field uint8

const (
	fUtilization field = iota
	fEncoder
	fDecoder
	fMemoryV2
	fMemory
	fPower
	fEnergy
	fTemperature
	fClockGraphics
	fClockSM
	fClockMemory
	fClockVideo
	fClockEvents       // nvmlDeviceGetCurrentClocksEventReasons (R535+)
	fClockEventsLegacy // nvmlDeviceGetCurrentClocksThrottleReasons
	fPState
	fFan
	fECCCorrected
	fECCUncorrected
	fRetiredSingleBit
	fRetiredDoubleBit
	fRetiredPending
	fRemappedRows
	fPCIeTx
	fPCIeRx
	fPCIeReplay
	fFieldValues // the nvmlDeviceGetFieldValues call itself
	fMemoryTemp  // field value NVML_FI_DEV_MEMORY_TEMP
	fNVLinkTx    // field value NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, all links
	fNVLinkRx    // field value NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, all links
	fProcesses
	fProcessUtil
	fMIGMode
	fMIGDevices
	numFields
)

var fieldNames = [numFields]string{
	fUtilization:       "utilization",
	fEncoder:           "encoder_utilization",
	fDecoder:           "decoder_utilization",
	fMemoryV2:          "memory_info_v2",
	fMemory:            "memory_info",
	fPower:             "power_usage",
	fEnergy:            "total_energy_consumption",
	fTemperature:       "temperature",
	fClockGraphics:     "clock_graphics",
	fClockSM:           "clock_sm",
	fClockMemory:       "clock_memory",
	fClockVideo:        "clock_video",
	fClockEvents:       "clocks_event_reasons",
	fClockEventsLegacy: "clocks_throttle_reasons",
	fPState:            "performance_state",
	fFan:               "fan_speed",
	fECCCorrected:      "ecc_corrected",
	fECCUncorrected:    "ecc_uncorrected",
	fRetiredSingleBit:  "retired_pages_single_bit",
	fRetiredDoubleBit:  "retired_pages_double_bit",
	fRetiredPending:    "retired_pages_pending",
	fRemappedRows:      "remapped_rows",
	fPCIeTx:            "pcie_throughput_tx",
	fPCIeRx:            "pcie_throughput_rx",
	fPCIeReplay:        "pcie_replay_counter",
	fFieldValues:       "field_values",
	fMemoryTemp:        "memory_temperature",
	fNVLinkTx:          "nvlink_data_tx",
	fNVLinkRx:          "nvlink_data_rx",
	fProcesses:         "compute_running_processes",
	fProcessUtil:       "process_utilization",
	fMIGMode:           "mig_mode",
	fMIGDevices:        "mig_devices",
}

func (f field) String() string { return fieldNames[f] }

// fieldSymbols are the NVML functions that older drivers lack. go-nvml
// binds symbols lazily, so calling one the loaded library does not export
// would abort the process; Start looks them up once and turns off the
// fields whose symbol is missing. Functions every supported driver has
// are not listed.
var fieldSymbols = map[field]string{
	fMemoryV2:          "nvmlDeviceGetMemoryInfo_v2",
	fEnergy:            "nvmlDeviceGetTotalEnergyConsumption",
	fClockEvents:       "nvmlDeviceGetCurrentClocksEventReasons",
	fClockEventsLegacy: "nvmlDeviceGetCurrentClocksThrottleReasons",
	fRemappedRows:      "nvmlDeviceGetRemappedRows",
	fPCIeTx:            "nvmlDeviceGetPcieThroughput",
	fPCIeRx:            "nvmlDeviceGetPcieThroughput",
	fPCIeReplay:        "nvmlDeviceGetPcieReplayCounter",
	fFieldValues:       "nvmlDeviceGetFieldValues",
	fMemoryTemp:        "nvmlDeviceGetFieldValues",
	fNVLinkTx:          "nvmlDeviceGetFieldValues",
	fNVLinkRx:          "nvmlDeviceGetFieldValues",
	fProcessUtil:       "nvmlDeviceGetProcessUtilization",
	fMIGMode:           "nvmlDeviceGetMigMode",
	fMIGDevices:        "nvmlDeviceGetMigDeviceHandleByIndex",
}

// fieldSet is a set of fields.
type fieldSet uint64

func (s fieldSet) has(f field) bool { return s&(1<<f) != 0 }
func (s *fieldSet) add(f field)     { *s |= 1 << f }

// wantedFields returns the fields the configuration needs: a field whose
// metrics are all disabled is never read.
func wantedFields(cfg *Config) fieldSet {
	m := &cfg.Metrics
	var s fieldSet
	set := func(on bool, fs ...field) {
		if on {
			for _, f := range fs {
				s.add(f)
			}
		}
	}
	set(m.HwGpuUtilization.Enabled || m.GpuMemoryControllerUtilization.Enabled, fUtilization)
	set(m.HwGpuUtilization.Enabled, fEncoder, fDecoder)
	set(m.HwGpuMemoryUsage.Enabled || m.HwGpuMemoryLimit.Enabled || m.HwGpuMemoryUtilization.Enabled, fMemoryV2, fMemory)
	set(m.HwPower.Enabled, fPower)
	set(m.HwEnergy.Enabled, fEnergy)
	set(m.HwTemperature.Enabled, fTemperature, fMemoryTemp)
	set(m.GpuClockFrequency.Enabled, fClockGraphics, fClockSM, fClockMemory, fClockVideo)
	set(m.GpuThrottleReasons.Enabled, fClockEvents, fClockEventsLegacy)
	set(m.GpuPerformanceState.Enabled, fPState)
	set(m.GpuFanSpeed.Enabled, fFan)
	set(m.HwErrors.Enabled, fECCCorrected, fECCUncorrected, fRetiredSingleBit, fRetiredDoubleBit, fPCIeReplay)
	set(m.HwErrors.Enabled || m.HwStatus.Enabled, fRemappedRows)
	set(m.HwStatus.Enabled, fRetiredPending)
	set(m.HwGpuIo.Enabled, fPCIeTx, fPCIeRx, fNVLinkTx, fNVLinkRx)
	set(s.has(fMemoryTemp) || s.has(fNVLinkTx), fFieldValues)
	procs := cfg.ProcessUsage && (m.GpuProcessMemoryUsage.Enabled || m.GpuProcessUtilization.Enabled)
	set(procs, fProcesses)
	set(cfg.ProcessUsage && m.GpuProcessUtilization.Enabled, fProcessUtil)
	mig := cfg.MIG && (procs || m.GpuMigMemoryUsage.Enabled || m.GpuMigMemoryLimit.Enabled || m.GpuMigMultiprocessorCount.Enabled)
	set(mig, fMIGMode, fMIGDevices)
	return s
}

// outcome classifies an NVML return code for one field of one device.
type outcome uint8

const (
	outcomeOK          outcome = iota
	outcomeUnsupported         // will never work on this device: stop asking
	outcomeLost                // the device is gone
	outcomeTransient           // try again next scrape
)

func classify(ret nvml.Return) outcome {
	switch ret {
	case nvml.SUCCESS:
		return outcomeOK
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_NO_PERMISSION, nvml.ERROR_FUNCTION_NOT_FOUND,
		nvml.ERROR_INVALID_ARGUMENT, nvml.ERROR_ARGUMENT_VERSION_MISMATCH, nvml.ERROR_DEPRECATED,
		nvml.ERROR_VGPU_ECC_NOT_SUPPORTED:
		return outcomeUnsupported
	case nvml.ERROR_GPU_IS_LOST:
		return outcomeLost
	default:
		return outcomeTransient
	}
}

// Field-value ids read in one nvmlDeviceGetFieldValues call.
const scopeAllLinks = math.MaxUint32 // "all NVLinks" for the throughput counters

var fieldValueIDs = [...]struct {
	f     field
	id    uint32
	scope uint32
}{
	{fMemoryTemp, nvml.FI_DEV_MEMORY_TEMP, 0},
	{fNVLinkTx, nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, scopeAllLinks},
	{fNVLinkRx, nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, scopeAllLinks},
}

// fieldUint64 decodes an integer field value; ok is false for doubles and
// unknown types.
func fieldUint64(v *nvml.FieldValue) (uint64, bool) {
	b := v.Value[:]
	switch nvml.ValueType(v.ValueType) {
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return uint64(binary.LittleEndian.Uint32(b)), true
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return binary.LittleEndian.Uint64(b), true
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		n := int64(binary.LittleEndian.Uint64(b))
		return uint64(n), n >= 0
	case nvml.VALUE_TYPE_SIGNED_INT:
		n := int32(binary.LittleEndian.Uint32(b))
		return uint64(n), n >= 0
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return uint64(binary.LittleEndian.Uint16(b)), true
	}
	return 0, false
}

// fieldFloat decodes any numeric field value.
func fieldFloat(v *nvml.FieldValue) (float64, bool) {
	if nvml.ValueType(v.ValueType) == nvml.VALUE_TYPE_DOUBLE {
		return math.Float64frombits(binary.LittleEndian.Uint64(v.Value[:])), true
	}
	n, ok := fieldUint64(v)
	return float64(n), ok
}

// Clock domains, in the order metrics are recorded.
var clockFields = [...]struct {
	f     field
	clock nvml.ClockType
	attr  metadata.AttributeClockType
}{
	{fClockGraphics, nvml.CLOCK_GRAPHICS, metadata.AttributeClockTypeGraphics},
	{fClockSM, nvml.CLOCK_SM, metadata.AttributeClockTypeSm},
	{fClockMemory, nvml.CLOCK_MEM, metadata.AttributeClockTypeMemory},
	{fClockVideo, nvml.CLOCK_VIDEO, metadata.AttributeClockTypeVideo},
}

// Clock event (throttle) reasons by bit.
var throttleReasons = [...]struct {
	bit  uint64
	attr metadata.AttributeThrottleReason
}{
	{nvml.ClocksEventReasonGpuIdle, metadata.AttributeThrottleReasonGpuIdle},
	{nvml.ClocksEventReasonApplicationsClocksSetting, metadata.AttributeThrottleReasonApplicationsClocksSetting},
	{nvml.ClocksEventReasonSwPowerCap, metadata.AttributeThrottleReasonSwPowerCap},
	{nvml.ClocksThrottleReasonHwSlowdown, metadata.AttributeThrottleReasonHwSlowdown},
	{nvml.ClocksEventReasonSyncBoost, metadata.AttributeThrottleReasonSyncBoost},
	{nvml.ClocksEventReasonSwThermalSlowdown, metadata.AttributeThrottleReasonSwThermalSlowdown},
	{nvml.ClocksThrottleReasonHwThermalSlowdown, metadata.AttributeThrottleReasonHwThermalSlowdown},
	{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, metadata.AttributeThrottleReasonHwPowerBrakeSlowdown},
	{nvml.ClocksEventReasonDisplayClockSetting, metadata.AttributeThrottleReasonDisplayClockSetting},
}
