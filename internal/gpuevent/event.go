package gpuevent

// Direction of a copy.
type Direction uint8

// Copy directions. DirDefault is a unified-addressing copy (cuMemcpy) whose
// direction the arguments alone do not tell; the translator may refine it
// from the allocations it has seen.
const (
	DirNone Direction = iota
	DirHtoD
	DirDtoH
	DirDtoD
	DirHtoH
	DirPeer
	DirDefault
)

var dirNames = [...]string{"", "htod", "dtoh", "dtod", "htoh", "peer", "default"}

func (d Direction) String() string {
	if int(d) < len(dirNames) {
		return dirNames[d]
	}
	return ""
}

// MemKind is the kind of memory an allocation call returns.
type MemKind uint8

// Memory kinds.
const (
	MemNone MemKind = iota
	MemDevice
	MemManaged
	MemHost
	MemPool
)

var memNames = [...]string{"", "device", "managed", "host", "pool"}

func (m MemKind) String() string {
	if int(m) < len(memNames) {
		return memNames[m]
	}
	return ""
}

// Event is one decoded record. The raw fields are what the source wrote; the
// interpreted fields below them are filled by Decode from the API's
// signature and are zero where the API has no such thing.
type Event struct {
	Kind     Kind
	API      API
	Source   Source
	Flags    uint16
	PID      uint32
	TID      uint32
	Start    uint64 // CLOCK_MONOTONIC ns at entry
	End      uint64 // CLOCK_MONOTONIC ns at return
	CgroupID uint64
	Result   int32
	Corr     uint32 // devrt's call number (links GPU execution records); 0 from uprobes
	Args     [NArgs]uint64
	Out      uint64
	Aux      [auxRawWords]uint64
	Name     string // named records: the function or kernel name; exec records: the comm

	// Handle is the object the call is about: the function, kernel or graph
	// launched; the module, library, context or function created or looked
	// up; the host stub registered; the event waited for.
	Handle uint64
	// Parent is the object Handle belongs to (module of a function, kernel
	// of a function from cuKernelGetFunction).
	Parent    uint64
	Stream    uint64
	Addr      uint64 // allocation address, freed address, copy/set destination
	Src       uint64 // copy source
	Bytes     uint64 // allocated, copied, set, prefetched or advised bytes
	Grid      [3]uint32
	Block     [3]uint32
	SharedMem uint32
	Direction Direction
	MemKind   MemKind
	Device    int32 // device ordinal the call names, -1 when none
}

// Returned reports whether the call was seen returning: false for calls
// reported at entry only, whose result and duration are unknown.
func (e *Event) Returned() bool { return e.Flags&FlagNoReturn == 0 }

// OK reports whether the call succeeded. __cudaRegisterFunction returns
// void, so whatever its return register held means nothing.
func (e *Event) OK() bool { return e.Result == 0 || e.API == APICudaRegisterFunction }

// Duration is the call's wall time in nanoseconds.
func (e *Event) Duration() uint64 { return e.End - e.Start }

// GridSize is the number of thread blocks launched.
func (e *Event) GridSize() uint64 {
	return uint64(e.Grid[0]) * uint64(e.Grid[1]) * uint64(e.Grid[2])
}

// BlockSize is the number of threads per block.
func (e *Event) BlockSize() uint64 {
	return uint64(e.Block[0]) * uint64(e.Block[1]) * uint64(e.Block[2])
}

func (e *Event) out() (uint64, bool) { return e.Out, e.Flags&FlagOutValid != 0 }

// CUmemorytype values in CUDA_MEMCPY2D/3D.
const (
	memTypeHost    = 1
	memTypeDevice  = 2
	memTypeArray   = 3
	memTypeUnified = 4
)

func lo32(v uint64) uint32 { return uint32(v) }
func hi32(v uint64) uint32 { return uint32(v >> 32) }

// interpret fills the interpreted fields from the raw arguments, following
// each API's C signature (System V AMD64: integer arguments in order, small
// structs by value packed into registers).
func interpret(e *Event) {
	a := &e.Args
	switch e.API {
	// cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
	// cuLaunchCooperativeKernel has the same first nine.
	case APICuLaunchKernel, APICuLaunchCooperativeKernel:
		e.Handle = a[0]
		e.Grid = [3]uint32{lo32(a[1]), lo32(a[2]), lo32(a[3])}
		e.Block[0], e.Block[1] = lo32(a[4]), lo32(a[5])
		if e.Flags&FlagStackValid != 0 {
			e.Block[2], e.SharedMem, e.Stream = lo32(a[6]), lo32(a[7]), a[8]
		}
	// cuLaunchKernelEx(const CUlaunchConfig *config, f, params, extra),
	// cudaLaunchKernelExC(const cudaLaunchConfig_t *config, func, args):
	// the configs share their first 40 bytes (grid, block, shared memory,
	// stream). ExC's func is the host stub, as cudaLaunchKernel's.
	case APICuLaunchKernelEx, APICudaLaunchKernelExC:
		e.Handle = a[1]
		if e.Flags&FlagAuxValid != 0 {
			x := e.Aux
			e.Grid = [3]uint32{lo32(x[0]), hi32(x[0]), lo32(x[1])}
			e.Block = [3]uint32{hi32(x[1]), lo32(x[2]), hi32(x[2])}
			e.SharedMem = lo32(x[3])
			e.Stream = x[4]
		}
	// cuGraphLaunch(exec, stream), cudaGraphLaunch(exec, stream)
	case APICuGraphLaunch, APICudaGraphLaunch:
		e.Handle, e.Stream = a[0], a[1]
	// cudaLaunchKernel(func, dim3 grid, dim3 block, args, shmem, stream):
	// each dim3 travels in two registers (x|y<<32, z).
	case APICudaLaunchKernel:
		e.Handle = a[0]
		e.Grid = [3]uint32{lo32(a[1]), hi32(a[1]), lo32(a[2])}
		e.Block = [3]uint32{lo32(a[3]), hi32(a[3]), lo32(a[4])}
		if e.Flags&FlagStackValid != 0 {
			e.SharedMem, e.Stream = lo32(a[6]), a[7]
		}

	// cuMemAlloc(CUdeviceptr *p, size), cuMemAllocManaged(p, size, flags),
	// cuMemAllocAsync(p, size, stream), cuMemAllocHost(void **p, size),
	// cuMemHostAlloc(void **p, size, flags)
	case APICuMemAlloc, APICuMemAllocManaged, APICuMemAllocAsync, APICuMemAllocHost, APICuMemHostAlloc:
		e.Bytes = a[1]
		e.Addr, _ = e.out()
		switch e.API {
		case APICuMemAlloc:
			e.MemKind = MemDevice
		case APICuMemAllocManaged:
			e.MemKind = MemManaged
		case APICuMemAllocAsync:
			e.MemKind, e.Stream = MemPool, a[2]
		default:
			e.MemKind = MemHost
		}
	// cuMemFree(p), cuMemFreeAsync(p, stream), cuMemFreeHost(p)
	case APICuMemFree:
		e.Addr, e.MemKind = a[0], MemDevice
	case APICuMemFreeAsync:
		e.Addr, e.Stream, e.MemKind = a[0], a[1], MemPool
	case APICuMemFreeHost:
		e.Addr, e.MemKind = a[0], MemHost
	// cuMemPrefetchAsync(p, count, int dstDevice, stream)
	case APICuMemPrefetchAsync:
		e.Addr, e.Bytes, e.Device, e.Stream = a[0], a[1], int32(lo32(a[2])), a[3]
	// cuMemPrefetchAsync_v2(p, count, CUmemLocation{type, id}, flags, stream)
	case APICuMemPrefetchAsyncV2:
		e.Addr, e.Bytes, e.Stream = a[0], a[1], a[4]
		e.Device = locationDevice(a[2])
	// cuMemAdvise(p, count, advice, int device)
	case APICuMemAdvise:
		e.Addr, e.Bytes, e.Device = a[0], a[1], int32(lo32(a[3]))
	// cuMemAdvise_v2(p, count, advice, CUmemLocation)
	case APICuMemAdviseV2:
		e.Addr, e.Bytes = a[0], a[1]
		e.Device = locationDevice(a[3])

	// cuMemcpy(dst, src, n), cuMemcpyAsync(dst, src, n, stream)
	case APICuMemcpy, APICuMemcpyAsync:
		e.Addr, e.Src, e.Bytes, e.Direction = a[0], a[1], a[2], DirDefault
		if e.API == APICuMemcpyAsync {
			e.Stream = a[3]
		}
	// cuMemcpy{HtoD,DtoH,DtoD}[Async](dst, src, n[, stream])
	case APICuMemcpyHtoD, APICuMemcpyHtoDAsync:
		copy1D(e, DirHtoD)
	case APICuMemcpyDtoH, APICuMemcpyDtoHAsync:
		copy1D(e, DirDtoH)
	case APICuMemcpyDtoD, APICuMemcpyDtoDAsync:
		copy1D(e, DirDtoD)
	// cuMemcpyPeer(dst, dstCtx, src, srcCtx, n[, stream])
	case APICuMemcpyPeer, APICuMemcpyPeerAsync:
		e.Addr, e.Src, e.Bytes, e.Direction = a[0], a[2], a[4], DirPeer
		if e.API == APICuMemcpyPeerAsync {
			e.Stream = a[5]
		}
	// cuMemcpy2D[Async|Unaligned](const CUDA_MEMCPY2D *[, stream]), 3D alike
	case APICuMemcpy2D, APICuMemcpy2DAsync, APICuMemcpy2DUnaligned, APICuMemcpy3D, APICuMemcpy3DAsync:
		if e.API == APICuMemcpy2DAsync || e.API == APICuMemcpy3DAsync {
			e.Stream = a[1]
		}
		if e.Flags&FlagAuxValid != 0 {
			w, h, d := e.Aux[0], e.Aux[1], e.Aux[2]
			e.Bytes = w * h * d
			e.Direction = memTypeDirection(lo32(e.Aux[3]), hi32(e.Aux[3]))
		}

	// cuMemsetD{8,16,32}[Async](dst, value, n[, stream])
	case APICuMemsetD8, APICuMemsetD8Async:
		memset1D(e, 1)
	case APICuMemsetD16, APICuMemsetD16Async:
		memset1D(e, 2)
	case APICuMemsetD32, APICuMemsetD32Async:
		memset1D(e, 4)
	// cuMemsetD2D{8,16,32}[Async](dst, pitch, value, width, height[, stream])
	case APICuMemsetD2D8, APICuMemsetD2D8Async:
		memset2D(e, 1)
	case APICuMemsetD2D16, APICuMemsetD2D16Async:
		memset2D(e, 2)
	case APICuMemsetD2D32, APICuMemsetD2D32Async:
		memset2D(e, 4)

	// cuStreamSynchronize(stream), cuEventSynchronize(event),
	// cuStreamWaitEvent(stream, event, flags)
	case APICuStreamSynchronize:
		e.Stream = a[0]
	case APICuEventSynchronize:
		e.Handle = a[0]
	case APICuStreamWaitEvent:
		e.Stream, e.Handle = a[0], a[1]

	// cuCtxCreate_v2(CUcontext *p, flags, dev); _v3(p, params, n, flags, dev);
	// _v4(p, CUctxCreateParams *, flags, dev); cuDevicePrimaryCtxRetain(p, dev)
	case APICuCtxCreate:
		e.Handle, _ = e.out()
		e.Device = int32(lo32(a[2]))
	case APICuCtxCreateV3:
		e.Handle, _ = e.out()
		e.Device = int32(lo32(a[4]))
	case APICuCtxCreateV4:
		e.Handle, _ = e.out()
		e.Device = int32(lo32(a[3]))
	case APICuDevicePrimaryCtxRetain:
		e.Handle, _ = e.out()
		e.Device = int32(lo32(a[1]))
	case APICuCtxDestroy:
		e.Handle = a[0]
	// cuModuleLoad*(CUmodule *m, image or file...),
	// cuLibraryLoadData / cuLibraryLoadFromFile(CUlibrary *l, ...)
	case APICuModuleLoadData, APICuModuleLoadDataEx, APICuModuleLoadFatBinary, APICuLibraryLoadData,
		APICuModuleLoad, APICuLibraryLoadFromFile:
		e.Handle, _ = e.out()
	// cuModuleGetFunction(CUfunction *f, mod, name),
	// cuLibraryGetKernel(CUkernel *k, lib, name), cuKernelGetFunction(CUfunction *f, kernel)
	case APICuModuleGetFunction, APICuLibraryGetKernel, APICuKernelGetFunction:
		e.Handle, _ = e.out()
		e.Parent = a[1]
	// void __cudaRegisterFunction(fatbin, hostFun, deviceFun, deviceName, ...)
	case APICudaRegisterFunction:
		e.Handle, e.Parent = a[1], a[0]
	}
	// devrt names a launch's device while device probes are in
	// (struct gpuext_launch_aux.device, the high half of its fourth word).
	if e.Flags&FlagDeviceValid != 0 && e.API.Class() == ClassLaunch {
		e.Device = int32(hi32(e.Aux[3]))
	}
}

func copy1D(e *Event, d Direction) {
	e.Addr, e.Src, e.Bytes, e.Direction = e.Args[0], e.Args[1], e.Args[2], d
	switch e.API {
	case APICuMemcpyHtoDAsync, APICuMemcpyDtoHAsync, APICuMemcpyDtoDAsync:
		e.Stream = e.Args[3]
	}
}

func memset1D(e *Event, elem uint64) {
	e.Addr, e.Bytes = e.Args[0], e.Args[2]*elem
	switch e.API {
	case APICuMemsetD8Async, APICuMemsetD16Async, APICuMemsetD32Async:
		e.Stream = e.Args[3]
	}
}

func memset2D(e *Event, elem uint64) {
	e.Addr, e.Bytes = e.Args[0], e.Args[3]*e.Args[4]*elem
	switch e.API {
	case APICuMemsetD2D8Async, APICuMemsetD2D16Async, APICuMemsetD2D32Async:
		e.Stream = e.Args[5]
	}
}

// locationDevice reads a CUmemLocation passed by value: type in the low
// word, id in the high word. Only CU_MEM_LOCATION_TYPE_DEVICE (1) names a GPU.
func locationDevice(v uint64) int32 {
	if lo32(v) == 1 {
		return int32(hi32(v))
	}
	return -1
}

func memTypeDirection(src, dst uint32) Direction {
	host := func(t uint32) bool { return t == memTypeHost }
	dev := func(t uint32) bool { return t == memTypeDevice || t == memTypeArray }
	switch {
	case host(src) && dev(dst):
		return DirHtoD
	case dev(src) && host(dst):
		return DirDtoH
	case dev(src) && dev(dst):
		return DirDtoD
	case host(src) && host(dst):
		return DirHtoH
	}
	return DirDefault
}
