package gpuevent

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func call(api API, flags uint16, args ...uint64) Event {
	ev := Event{Kind: KindCall, API: api, Source: SourceUprobe, Flags: flags, PID: 42, TID: 43,
		Start: 1000, End: 1500, CgroupID: 7}
	copy(ev.Args[:], args)
	return ev
}

func roundTrip(t *testing.T, in Event) Event {
	t.Helper()
	var out Event
	require.NoError(t, Decode(AppendRecord(nil, &in), &out))
	return out
}

func TestDecodeInterpretsArguments(t *testing.T) {
	const stack = FlagStackValid
	withOut := func(ev Event, out uint64) Event { ev.Out = out; ev.Flags |= FlagOutValid; return ev }
	withAux := func(ev Event, aux ...uint64) Event { copy(ev.Aux[:], aux); ev.Flags |= FlagAuxValid; return ev }
	withDev := func(ev Event, dev uint32) Event {
		ev.Aux[3] = ev.Aux[3]&0xffffffff | uint64(dev)<<32
		ev.Flags |= FlagDeviceValid
		return ev
	}

	tests := []struct {
		name  string
		in    Event
		check func(t *testing.T, e Event)
	}{
		{"cuLaunchKernel", call(APICuLaunchKernel, stack, 0xf00, 128, 2, 1, 256, 1, 1, 1024, 0x5), func(t *testing.T, e Event) {
			require.Equal(t, uint64(0xf00), e.Handle)
			require.Equal(t, [3]uint32{128, 2, 1}, e.Grid)
			require.Equal(t, [3]uint32{256, 1, 1}, e.Block)
			require.Equal(t, uint32(1024), e.SharedMem)
			require.Equal(t, uint64(5), e.Stream)
			require.Equal(t, uint64(256), e.GridSize())
			require.Equal(t, uint64(256), e.BlockSize())
		}},
		{"cuLaunchKernel without stack args", call(APICuLaunchKernel, 0, 0xf00, 1, 1, 1, 32, 1, 9, 9, 9), func(t *testing.T, e Event) {
			require.Equal(t, [3]uint32{32, 1, 0}, e.Block)
			require.Zero(t, e.Stream)
		}},
		{"cuLaunchKernel naming its device", withDev(call(APICuLaunchKernel, stack, 0xf00, 1, 1, 1, 32, 1, 1, 0, 0), 3), func(t *testing.T, e Event) {
			require.Equal(t, int32(3), e.Device)
			require.Equal(t, uint64(0xf00), e.Handle)
		}},
		{"cuLaunchKernel, device word without the flag", func() Event {
			ev := call(APICuLaunchKernel, stack, 0xf00, 1, 1, 1, 32, 1, 1, 0, 0)
			ev.Aux[3] = 3 << 32
			return ev
		}(), func(t *testing.T, e Event) {
			require.Equal(t, int32(-1), e.Device)
		}},
		{"cuLaunchKernelEx naming its device", withDev(withAux(call(APICuLaunchKernelEx, 0, 0xc0f, 0xf01),
			64|8<<32, 1|128<<32, 2|3<<32, 4096, 0x77), 1), func(t *testing.T, e Event) {
			require.Equal(t, int32(1), e.Device)
			require.Equal(t, uint32(4096), e.SharedMem, "the device is the high half")
			require.Equal(t, uint64(0x77), e.Stream)
		}},
		{"cudaLaunchKernel naming device 0", withDev(call(APICudaLaunchKernel, stack, 0x401000, 1|1<<32, 1, 32|1<<32, 1, 0, 0, 0), 0), func(t *testing.T, e Event) {
			require.Equal(t, int32(0), e.Device)
		}},
		{"the flag on a call that is not a launch", withDev(call(APICuMemFree, 0, 0xd0), 2), func(t *testing.T, e Event) {
			require.Equal(t, int32(-1), e.Device)
		}},
		{"cuLaunchKernelEx", withAux(call(APICuLaunchKernelEx, 0, 0xc0f, 0xf01),
			64|8<<32, 1|128<<32, 2|3<<32, 4096, 0x77), func(t *testing.T, e Event) {
			require.Equal(t, uint64(0xf01), e.Handle)
			require.Equal(t, [3]uint32{64, 8, 1}, e.Grid)
			require.Equal(t, [3]uint32{128, 2, 3}, e.Block)
			require.Equal(t, uint32(4096), e.SharedMem)
			require.Equal(t, uint64(0x77), e.Stream)
		}},
		{"cudaLaunchKernelExC", withAux(call(APICudaLaunchKernelExC, 0, 0xc0f, 0x401000, 0x7ffc1000),
			32|4<<32, 2|256<<32, 1|1<<32, 0xdead00000800, 0x88), func(t *testing.T, e Event) {
			require.Equal(t, uint64(0x401000), e.Handle)
			require.Equal(t, [3]uint32{32, 4, 2}, e.Grid)
			require.Equal(t, [3]uint32{256, 1, 1}, e.Block)
			require.Equal(t, uint32(0x800), e.SharedMem)
			require.Equal(t, uint64(0x88), e.Stream)
			require.True(t, e.API.Runtime())
			require.Equal(t, "cudaLaunchKernelExC", e.API.String())
		}},
		{"cudaLaunchKernel", call(APICudaLaunchKernel, stack, 0x401000, 64|2<<32, 3, 128|1<<32, 1, 0xa, 512, 0x9), func(t *testing.T, e Event) {
			require.Equal(t, uint64(0x401000), e.Handle)
			require.Equal(t, [3]uint32{64, 2, 3}, e.Grid)
			require.Equal(t, [3]uint32{128, 1, 1}, e.Block)
			require.Equal(t, uint32(512), e.SharedMem)
			require.Equal(t, uint64(9), e.Stream)
		}},
		{"cuGraphLaunch", call(APICuGraphLaunch, 0, 0x6, 0x7), func(t *testing.T, e Event) {
			require.Equal(t, uint64(6), e.Handle)
			require.Equal(t, uint64(7), e.Stream)
		}},
		{"cuMemAlloc", withOut(call(APICuMemAlloc, 0, 0x7ffc0000, 1<<20), 0x7f0000000000), func(t *testing.T, e Event) {
			require.Equal(t, uint64(0x7f0000000000), e.Addr)
			require.Equal(t, uint64(1<<20), e.Bytes)
			require.Equal(t, MemDevice, e.MemKind)
		}},
		{"cuMemAllocAsync", withOut(call(APICuMemAllocAsync, 0, 0x1, 2<<20, 0x33), 0xd00), func(t *testing.T, e Event) {
			require.Equal(t, MemPool, e.MemKind)
			require.Equal(t, uint64(0x33), e.Stream)
			require.Equal(t, uint64(0xd00), e.Addr)
		}},
		{"cuMemAlloc out unreadable", call(APICuMemAlloc, FlagReadFault, 0x1, 64), func(t *testing.T, e Event) {
			require.Zero(t, e.Addr)
		}},
		{"cuMemHostAlloc", withOut(call(APICuMemHostAlloc, 0, 0x1, 4096, 0), 0x5000), func(t *testing.T, e Event) {
			require.Equal(t, MemHost, e.MemKind)
		}},
		{"cuMemFreeAsync", call(APICuMemFreeAsync, 0, 0xd00, 0x33), func(t *testing.T, e Event) {
			require.Equal(t, uint64(0xd00), e.Addr)
			require.Equal(t, MemPool, e.MemKind)
		}},
		{"cuMemPrefetchAsync", call(APICuMemPrefetchAsync, 0, 0xa0, 4096, 1, 0x3), func(t *testing.T, e Event) {
			require.Equal(t, int32(1), e.Device)
			require.Equal(t, uint64(4096), e.Bytes)
		}},
		{"cuMemPrefetchAsync_v2 device", call(APICuMemPrefetchAsyncV2, 0, 0xa0, 4096, 1|2<<32, 0, 0x3), func(t *testing.T, e Event) {
			require.Equal(t, int32(2), e.Device)
			require.Equal(t, uint64(3), e.Stream)
		}},
		{"cuMemAdvise_v2 host", call(APICuMemAdviseV2, 0, 0xa0, 4096, 1, 2|0<<32), func(t *testing.T, e Event) {
			require.Equal(t, int32(-1), e.Device)
		}},
		{"cuMemcpyHtoD", call(APICuMemcpyHtoD, 0, 0xd0, 0x10, 4096), func(t *testing.T, e Event) {
			require.Equal(t, DirHtoD, e.Direction)
			require.Equal(t, uint64(4096), e.Bytes)
			require.Equal(t, uint64(0xd0), e.Addr)
			require.Equal(t, uint64(0x10), e.Src)
		}},
		{"cuMemcpyDtoHAsync", call(APICuMemcpyDtoHAsync, 0, 0x10, 0xd0, 2000, 0x4), func(t *testing.T, e Event) {
			require.Equal(t, DirDtoH, e.Direction)
			require.Equal(t, uint64(4), e.Stream)
		}},
		{"cuMemcpy", call(APICuMemcpy, 0, 0x1, 0x2, 77), func(t *testing.T, e Event) {
			require.Equal(t, DirDefault, e.Direction)
			require.Equal(t, uint64(77), e.Bytes)
		}},
		{"cuMemcpyPeerAsync", call(APICuMemcpyPeerAsync, 0, 0x1, 0xc1, 0x2, 0xc2, 512, 0x8), func(t *testing.T, e Event) {
			require.Equal(t, DirPeer, e.Direction)
			require.Equal(t, uint64(512), e.Bytes)
			require.Equal(t, uint64(2), e.Src)
			require.Equal(t, uint64(8), e.Stream)
		}},
		{"cuMemcpy2D", withAux(call(APICuMemcpy2D, 0, 0x100), 256, 4, 1, 1|2<<32), func(t *testing.T, e Event) {
			require.Equal(t, uint64(1024), e.Bytes)
			require.Equal(t, DirHtoD, e.Direction)
		}},
		{"cuMemcpy3DAsync", withAux(call(APICuMemcpy3DAsync, 0, 0x100, 0x9), 64, 4, 2, 2|1<<32), func(t *testing.T, e Event) {
			require.Equal(t, uint64(512), e.Bytes)
			require.Equal(t, DirDtoH, e.Direction)
			require.Equal(t, uint64(9), e.Stream)
		}},
		{"cuMemcpy2D unified", withAux(call(APICuMemcpy2D, 0, 0x100), 8, 8, 1, 4|2<<32), func(t *testing.T, e Event) {
			require.Equal(t, DirDefault, e.Direction)
		}},
		{"cuMemsetD32", call(APICuMemsetD32, 0, 0xd0, 7, 1024), func(t *testing.T, e Event) {
			require.Equal(t, uint64(4096), e.Bytes)
		}},
		{"cuMemsetD2D16Async", call(APICuMemsetD2D16Async, 0, 0xd0, 512, 7, 100, 3, 0x2), func(t *testing.T, e Event) {
			require.Equal(t, uint64(600), e.Bytes)
			require.Equal(t, uint64(2), e.Stream)
		}},
		{"cuStreamWaitEvent", call(APICuStreamWaitEvent, 0, 0x2, 0x3, 0), func(t *testing.T, e Event) {
			require.Equal(t, uint64(2), e.Stream)
			require.Equal(t, uint64(3), e.Handle)
		}},
		{"cuCtxCreate_v4", withOut(call(APICuCtxCreateV4, 0, 0x1, 0x2, 0, 3), 0xcc), func(t *testing.T, e Event) {
			require.Equal(t, uint64(0xcc), e.Handle)
			require.Equal(t, int32(3), e.Device)
			require.Equal(t, "cuCtxCreate", e.API.String())
		}},
		{"cuDevicePrimaryCtxRetain", withOut(call(APICuDevicePrimaryCtxRetain, 0, 0x1, 1), 0xcd), func(t *testing.T, e Event) {
			require.Equal(t, int32(1), e.Device)
		}},
		{"cuModuleLoadData", withOut(call(APICuModuleLoadData, 0, 0x1, 0x2), 0xe0), func(t *testing.T, e Event) {
			require.Equal(t, uint64(0xe0), e.Handle)
		}},
		{"cudaRegisterFunction returns void", func() Event {
			ev := call(APICudaRegisterFunction, 0, 0xfa7, 0x401000, 0x402000, 0x403000)
			ev.Result = 12345
			return ev
		}(), func(t *testing.T, e Event) {
			require.Equal(t, uint64(0x401000), e.Handle)
			require.True(t, e.OK())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := roundTrip(t, tt.in)
			require.Equal(t, tt.in.API, e.API)
			require.Equal(t, uint32(42), e.PID)
			require.Equal(t, uint32(43), e.TID)
			require.Equal(t, uint64(500), e.Duration())
			tt.check(t, e)
		})
	}
}

func TestDecodeNamed(t *testing.T) {
	in := call(APICuModuleGetFunction, FlagOutValid, 0x1, 0xe0, 0x2)
	in.Kind, in.Out, in.Name = KindCallNamed, 0xf00, "_Z6vecAddPfS_S_i"
	e := roundTrip(t, in)
	require.Equal(t, "_Z6vecAddPfS_S_i", e.Name)
	require.Equal(t, uint64(0xf00), e.Handle)
	require.Equal(t, uint64(0xe0), e.Parent)
}

func TestDecodeRejects(t *testing.T) {
	good := call(APICuCtxSynchronize, 0)
	named := call(APICuModuleGetFunction, 0)
	named.Kind = KindCallNamed
	namedRec := AppendRecord(nil, &named)
	for i := EventSize; i < len(namedRec); i++ {
		namedRec[i] = 'x'
	}
	badAPI := good
	badAPI.API = 127
	badKind := good
	badKind.Kind = 9
	back := good
	back.Start, back.End = 10, 5

	tests := []struct {
		name string
		rec  []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"short", AppendRecord(nil, &good)[:100], ErrShort},
		{"long call", append(AppendRecord(nil, &good), 0), ErrSize},
		{"unknown kind", AppendRecord(nil, &badKind), ErrKind},
		{"unknown api", AppendRecord(nil, &badAPI), ErrAPI},
		{"name without NUL", namedRec, ErrNoName},
		{"time backwards", AppendRecord(nil, &back), ErrTimeBack},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e Event
			err := Decode(tt.rec, &e)
			require.Error(t, err)
			require.True(t, errors.Is(err, tt.want), "got %v", err)
		})
	}
}

func TestResultName(t *testing.T) {
	tests := []struct {
		api  API
		code int32
		want string
	}{
		{APICuMemAlloc, 0, "CUDA_SUCCESS"},
		{APICuMemAlloc, 2, "CUDA_ERROR_OUT_OF_MEMORY"},
		{APICuLaunchKernel, 719, "CUDA_ERROR_LAUNCH_FAILED"},
		{APICuMemAlloc, 4242, "CUDA_ERROR_4242"},
		{APICudaLaunchKernel, 0, "cudaSuccess"},
		{APICudaLaunchKernel, 98, "cudaErrorInvalidDeviceFunction"},
		{APICudaLaunchKernel, 4242, "cudaError4242"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, ResultName(tt.api, tt.code))
	}
}

func TestClasses(t *testing.T) {
	require.Equal(t, ClassLaunch, APICudaGraphLaunch.Class())
	require.Equal(t, ClassCopy, APICuMemsetD8.Class())
	require.Equal(t, ClassSync, APICuStreamWaitEvent.Class())
	require.Equal(t, ClassModule, ClassByName("module"))
	require.Equal(t, ClassNone, ClassByName("bogus"))
	require.Equal(t, "unknown", API(99).String())
	require.Len(t, APIs(), 65)
}

func FuzzDecode(f *testing.F) {
	// testdata/fuzz/FuzzDecode holds earlier findings; these add valid records.
	for _, api := range []API{APICuLaunchKernel, APICuMemcpy3D, APICuModuleGetFunction} {
		ev := call(api, FlagStackValid|FlagAuxValid|FlagOutValid, 1, 2, 3, 4, 5, 6, 7, 8, 9)
		f.Add(AppendRecord(nil, &ev))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Event
		if err := Decode(b, &e); err != nil {
			return
		}
		// A record that decodes re-encodes to the same bytes.
		again := AppendRecord(nil, &e)
		if e.Kind != KindCallNamed {
			require.Equal(t, b, again)
		}
	})
}
