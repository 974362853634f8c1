package devrtinject

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
)

// abiSpec compiles testdata/abi.bpf.c (the records of gpuext_abi.h) with
// clang-19, which make generate needs anyway, and returns its BTF: the
// layout the C compiler gave the header, to compare with this package's.
func abiSpec(t *testing.T) *btf.Spec {
	t.Helper()
	cc, err := exec.LookPath("clang-19")
	require.NoError(t, err, "clang-19 (scripts/install-deps.sh installs it)")
	_, self, _, _ := runtime.Caller(0)
	here := filepath.Dir(self)
	obj := filepath.Join(t.TempDir(), "abi.o")
	cmd := exec.Command(cc, "-target", "bpf", "-g", "-O2", "-c",
		"-I", filepath.Join(here, "..", "..", "bpf", "include"),
		"-idirafter", "/usr/include/x86_64-linux-gnu",
		"-o", obj, filepath.Join(here, "testdata", "abi.bpf.c"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	f, err := os.Open(obj)
	require.NoError(t, err)
	defer f.Close()
	spec, err := btf.LoadSpecFromReader(f)
	require.NoError(t, err)
	return spec
}

func members(t *testing.T, spec *btf.Spec, name string) (map[string]uint32, uint32) {
	t.Helper()
	var st *btf.Struct
	require.NoError(t, spec.TypeByName(name, &st))
	got := map[string]uint32{}
	for _, m := range st.Members {
		if !strings.HasPrefix(m.Name, "_") {
			got[m.Name] = m.Offset.Bytes()
		}
	}
	return got, st.Size
}

func enumValues(t *testing.T, spec *btf.Spec, name, prefix string) map[string]uint64 {
	t.Helper()
	var e *btf.Enum
	require.NoError(t, spec.TypeByName(name, &e))
	got := map[string]uint64{}
	for _, v := range e.Values {
		got[strings.TrimPrefix(v.Name, prefix)] = v.Value
	}
	return got
}

func TestLayoutMatchesBTF(t *testing.T) {
	spec := abiSpec(t)
	tests := []struct {
		name string
		size uint32
		want map[string]uint32
	}{
		{"gpuext_inj_req", ReqHeaderSize, map[string]uint32{
			"magic": 0, "version": 4, "hdr_size": 6, "pid": 8, "sm_arch": 12,
			"ptx_len": 16, "names_len": 24, "nkernels": 28, "api": 32, "image": 34,
			"flags": 36, "sha256": 40}},
		{"gpuext_inj_resp", RespHeaderSize, map[string]uint32{
			"magic": 0, "version": 4, "hdr_size": 6, "status": 8, "reason_len": 12,
			"ptx_len": 16, "names_len": 24, "nkernels": 28, "shared_size": 32,
			"probe_version": 40, "flags": 48, "init_len": 52, "sha256": 56}},
		{"gpuext_inj_init", InitHeaderSize, map[string]uint32{"offset": 0, "len": 8}},
		{"gpuext_inject_event", EventSize, map[string]uint32{
			"kind": evOffKind, "api": evOffAPI, "source": evOffSource, "flags": evOffFlags,
			"pid": evOffPID, "tid": evOffTID, "ts_ns": evOffTS, "module": evOffModule,
			"patched": evOffPatched, "shared_dptr": evOffSharedDptr,
			"shared_size": evOffSharedSize, "ask_ns": evOffAskNS, "load_ns": evOffLoadNS,
			"total_ns": evOffTotalNS, "ptx_len": evOffPTXLen, "outcome": evOffOutcome,
			"reason": evOffReason, "sm_arch": evOffSMArch, "kernels": evOffKernels,
			"cuda_result": evOffCUDAResult, "sha256": evOffSHA256, "text": evOffText}},
		{"gpuext_devmaps_info", DeviceInfoSize, map[string]uint32{
			"magic": diOffMagic, "version": diOffVersion, "size": diOffSize,
			"region_len": diOffRegionLen, "device": diOffDevice, "flags": diOffFlags,
			"uuid": diOffUUID, "ctx": diOffCtx, "copy_start_ns": DeviceInfoOffCopyStart, "copy_end_ns": DeviceInfoOffCopyEnd}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, size := members(t, spec, tc.name)
			require.Equal(t, tc.size, size)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestEnumsMatchBTF(t *testing.T) {
	spec := abiSpec(t)
	require.Equal(t, map[string]uint64{
		"PATCHED": uint64(StatusPatched), "UNCHANGED": uint64(StatusUnchanged),
		"REJECTED": uint64(StatusRejected), "ERROR": uint64(StatusError),
	}, enumValues(t, spec, "gpuext_inj_status", "GPUEXT_INJ_"))
	require.Equal(t, map[string]uint64{"PTX": uint64(ImagePTX), "FATBIN": uint64(ImageFatbin), "TRITON": uint64(ImageTriton)},
		enumValues(t, spec, "gpuext_inj_image", "GPUEXT_INJ_IMAGE_"))
	outcomes := map[string]uint64{}
	for o := OutPatched; o <= OutFailed; o++ {
		outcomes[strings.ToUpper(o.String())] = uint64(o)
	}
	require.Equal(t, outcomes, enumValues(t, spec, "gpuext_inj_outcome", "GPUEXT_INJ_OUT_"))
	reasons := map[string]uint64{}
	for r := range Reason(len(reasonNames)) {
		reasons[strings.ToUpper(r.String())] = uint64(r)
	}
	require.Equal(t, reasons, enumValues(t, spec, "gpuext_inj_reason", "GPUEXT_INJ_R_"))
}

// TestConstantsMatchHeader checks the #defines Go mirrors, read from the
// header's text (BTF has no macros).
func TestConstantsMatchHeader(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	hdr, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "bpf", "include", "gpuext_abi.h"))
	require.NoError(t, err)
	want := map[string]string{
		"GPUEXT_INJ_REQ_MAGIC":        "0x51524a47U",
		"GPUEXT_INJ_RESP_MAGIC":       "0x53524a47U",
		"GPUEXT_INJ_VERSION":          "2",
		"GPUEXT_INJ_MAX_INIT":         "(1U << 20)",
		"GPUEXT_INJ_MAX_PTX":          "(64U << 20)",
		"GPUEXT_INJ_MAX_NAMES":        "(4U << 20)",
		"GPUEXT_INJ_MAX_KERNELS":      "65536",
		"GPUEXT_INJ_MAX_REASON":       "1024",
		"GPUEXT_INJ_MAX_SHARED":       "(1ULL << 30)",
		"GPUEXT_INJ_SOCK_NAME":        `"` + SocketName + `"`,
		"GPUEXT_INJ_SHARED_GLOBAL":    `"` + SharedGlobal + `"`,
		"GPUEXT_INJ_GRID1D_SUFFIX":    `"` + Grid1DSuffix + `"`,
		"GPUEXT_INJ_PLAIN_SUFFIX":     `"` + PlainSuffix + `"`,
		"GPUEXT_KIND_INJECT":          "8",
		"GPUEXT_INJ_RF_CACHED":        "(1U << 0)",
		"GPUEXT_INJ_RF_VARS":          "(1U << 1)",
		"GPUEXT_INJ_QF_VARS":          "(1U << 0)",
		"GPUEXT_IF_COLLECTOR_CACHE":   "(1U << 0)",
		"GPUEXT_IF_LIBRARY":           "(1U << 1)",
		"GPUEXT_IF_REGION_SHARED":     "(1U << 2)",
		"GPUEXT_IF_OTHER_CONTEXT":     "(1U << 3)",
		"GPUEXT_IF_GRID1D":            "(1U << 4)",
		"GPUEXT_IF_VARS":              "(1U << 5)",
		"GPUEXT_DEVMAPS_INFO_MAGIC":   "0x4f464e49U",
		"GPUEXT_DEVMAPS_INFO_VERSION": "1",
		"GPUEXT_DEVMAPS_INFO_SIZE":    "64",
		"GPUEXT_DEVMAPS_TRAILER":      "4096",
		"GPUEXT_DMI_UUID":             "(1U << 0)",
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(hdr), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "#define" {
			if _, ok := want[f[1]]; ok {
				v := f[2]
				if strings.HasPrefix(v, "(") {
					v = strings.Join(f[2:5], " ")
				}
				got[f[1]] = v
			}
		}
	}
	require.Equal(t, want, got)
	require.Equal(t, uint32(0x51524a47), uint32(ReqMagic))
	require.Equal(t, 64<<20, MaxPTX)
	require.Equal(t, 4<<20, MaxNames)
	require.Equal(t, 1<<30, MaxShared)
	require.Equal(t, 1, RespCached)
	require.Equal(t, 1, FlagCollectorCache)
	require.Equal(t, 2, FlagLibrary)
	require.Equal(t, 16, FlagGrid1D)
	require.Equal(t, 32, FlagVars)
	require.Equal(t, 2, RespVars)
	require.Equal(t, 1, ReqVars)
	// The rewriter names the 1-D entries devrt looks up by the header's
	// suffix.
	require.Equal(t, Grid1DSuffix, ptx.Grid1DSuffix)
}
