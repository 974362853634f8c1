package gpuevent

// API identifies a CUDA function; the values are enum gpuext_api.
type API uint16

// API ids, mirroring enum gpuext_api in bpf/include/gpuext_abi.h (checked
// against the compiled object's BTF in tests).
const (
	APINone                      API = 0
	APICuLaunchKernel            API = 1
	APICuLaunchKernelEx          API = 2
	APICuLaunchCooperativeKernel API = 3
	APICuGraphLaunch             API = 4
	APICudaLaunchKernel          API = 5
	APICudaGraphLaunch           API = 6
	APICudaLaunchKernelExC       API = 7
	APICuMemAlloc                API = 10
	APICuMemAllocManaged         API = 11
	APICuMemAllocAsync           API = 12
	APICuMemAllocHost            API = 13
	APICuMemHostAlloc            API = 14
	APICuMemFree                 API = 15
	APICuMemFreeAsync            API = 16
	APICuMemFreeHost             API = 17
	APICuMemPrefetchAsync        API = 18
	APICuMemAdvise               API = 19
	APICuMemPrefetchAsyncV2      API = 20
	APICuMemAdviseV2             API = 21
	APICuMemcpy                  API = 30
	APICuMemcpyAsync             API = 31
	APICuMemcpyHtoD              API = 32
	APICuMemcpyDtoH              API = 33
	APICuMemcpyDtoD              API = 34
	APICuMemcpyHtoDAsync         API = 35
	APICuMemcpyDtoHAsync         API = 36
	APICuMemcpyDtoDAsync         API = 37
	APICuMemcpyPeer              API = 38
	APICuMemcpyPeerAsync         API = 39
	APICuMemcpy2D                API = 40
	APICuMemcpy2DAsync           API = 41
	APICuMemcpy2DUnaligned       API = 42
	APICuMemcpy3D                API = 43
	APICuMemcpy3DAsync           API = 44
	APICuMemsetD8                API = 50
	APICuMemsetD16               API = 51
	APICuMemsetD32               API = 52
	APICuMemsetD8Async           API = 53
	APICuMemsetD16Async          API = 54
	APICuMemsetD32Async          API = 55
	APICuMemsetD2D8              API = 56
	APICuMemsetD2D16             API = 57
	APICuMemsetD2D32             API = 58
	APICuMemsetD2D8Async         API = 59
	APICuMemsetD2D16Async        API = 60
	APICuMemsetD2D32Async        API = 61
	APICuCtxSynchronize          API = 70
	APICuStreamSynchronize       API = 71
	APICuEventSynchronize        API = 72
	APICuStreamWaitEvent         API = 73
	APICuCtxCreate               API = 80
	APICuDevicePrimaryCtxRetain  API = 81
	APICuCtxDestroy              API = 82
	APICuModuleLoadData          API = 83
	APICuModuleLoadDataEx        API = 84
	APICuModuleLoadFatBinary     API = 85
	APICuLibraryLoadData         API = 86
	APICuModuleGetFunction       API = 87
	APICuLibraryGetKernel        API = 88
	APICuKernelGetFunction       API = 89
	APICudaRegisterFunction      API = 90
	APICuCtxCreateV3             API = 91
	APICuCtxCreateV4             API = 92
	APICuModuleLoad              API = 93 // from a file
	APICuLibraryLoadFromFile     API = 94

	// APIMax bounds the ids (GPUEXT_API_MAX); tables index by API.
	APIMax API = 128
)

// Class groups APIs for span selection and for the decoder.
type Class uint8

// API classes. The names are the values accepted in spans.classes.
const (
	ClassNone Class = iota
	ClassLaunch
	ClassMemory
	ClassCopy
	ClassSync
	ClassModule
	ClassContext
)

var classNames = [...]string{"", "launch", "memory", "copy", "sync", "module", "context"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return ""
}

// ClassByName returns the class called name, or ClassNone.
func ClassByName(name string) Class {
	for i, n := range classNames {
		if n == name && i > 0 {
			return Class(i)
		}
	}
	return ClassNone
}

type apiInfo struct {
	name    string // reported name: the function without version suffix
	enum    string // the enumerator's suffix in gpuext_abi.h
	class   Class
	runtime bool // a CUDA runtime (cudart) function: results are cudaError_t
}

var apis = [APIMax]apiInfo{
	APICuLaunchKernel:            {"cuLaunchKernel", "cuLaunchKernel", ClassLaunch, false},
	APICuLaunchKernelEx:          {"cuLaunchKernelEx", "cuLaunchKernelEx", ClassLaunch, false},
	APICuLaunchCooperativeKernel: {"cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", ClassLaunch, false},
	APICuGraphLaunch:             {"cuGraphLaunch", "cuGraphLaunch", ClassLaunch, false},
	APICudaLaunchKernel:          {"cudaLaunchKernel", "cudaLaunchKernel", ClassLaunch, true},
	APICudaGraphLaunch:           {"cudaGraphLaunch", "cudaGraphLaunch", ClassLaunch, true},
	APICudaLaunchKernelExC:       {"cudaLaunchKernelExC", "cudaLaunchKernelExC", ClassLaunch, true},
	APICuMemAlloc:                {"cuMemAlloc", "cuMemAlloc", ClassMemory, false},
	APICuMemAllocManaged:         {"cuMemAllocManaged", "cuMemAllocManaged", ClassMemory, false},
	APICuMemAllocAsync:           {"cuMemAllocAsync", "cuMemAllocAsync", ClassMemory, false},
	APICuMemAllocHost:            {"cuMemAllocHost", "cuMemAllocHost", ClassMemory, false},
	APICuMemHostAlloc:            {"cuMemHostAlloc", "cuMemHostAlloc", ClassMemory, false},
	APICuMemFree:                 {"cuMemFree", "cuMemFree", ClassMemory, false},
	APICuMemFreeAsync:            {"cuMemFreeAsync", "cuMemFreeAsync", ClassMemory, false},
	APICuMemFreeHost:             {"cuMemFreeHost", "cuMemFreeHost", ClassMemory, false},
	APICuMemPrefetchAsync:        {"cuMemPrefetchAsync", "cuMemPrefetchAsync", ClassMemory, false},
	APICuMemAdvise:               {"cuMemAdvise", "cuMemAdvise", ClassMemory, false},
	APICuMemPrefetchAsyncV2:      {"cuMemPrefetchAsync", "cuMemPrefetchAsync_v2", ClassMemory, false},
	APICuMemAdviseV2:             {"cuMemAdvise", "cuMemAdvise_v2", ClassMemory, false},
	APICuMemcpy:                  {"cuMemcpy", "cuMemcpy", ClassCopy, false},
	APICuMemcpyAsync:             {"cuMemcpyAsync", "cuMemcpyAsync", ClassCopy, false},
	APICuMemcpyHtoD:              {"cuMemcpyHtoD", "cuMemcpyHtoD", ClassCopy, false},
	APICuMemcpyDtoH:              {"cuMemcpyDtoH", "cuMemcpyDtoH", ClassCopy, false},
	APICuMemcpyDtoD:              {"cuMemcpyDtoD", "cuMemcpyDtoD", ClassCopy, false},
	APICuMemcpyHtoDAsync:         {"cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync", ClassCopy, false},
	APICuMemcpyDtoHAsync:         {"cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync", ClassCopy, false},
	APICuMemcpyDtoDAsync:         {"cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync", ClassCopy, false},
	APICuMemcpyPeer:              {"cuMemcpyPeer", "cuMemcpyPeer", ClassCopy, false},
	APICuMemcpyPeerAsync:         {"cuMemcpyPeerAsync", "cuMemcpyPeerAsync", ClassCopy, false},
	APICuMemcpy2D:                {"cuMemcpy2D", "cuMemcpy2D", ClassCopy, false},
	APICuMemcpy2DAsync:           {"cuMemcpy2DAsync", "cuMemcpy2DAsync", ClassCopy, false},
	APICuMemcpy2DUnaligned:       {"cuMemcpy2DUnaligned", "cuMemcpy2DUnaligned", ClassCopy, false},
	APICuMemcpy3D:                {"cuMemcpy3D", "cuMemcpy3D", ClassCopy, false},
	APICuMemcpy3DAsync:           {"cuMemcpy3DAsync", "cuMemcpy3DAsync", ClassCopy, false},
	APICuMemsetD8:                {"cuMemsetD8", "cuMemsetD8", ClassCopy, false},
	APICuMemsetD16:               {"cuMemsetD16", "cuMemsetD16", ClassCopy, false},
	APICuMemsetD32:               {"cuMemsetD32", "cuMemsetD32", ClassCopy, false},
	APICuMemsetD8Async:           {"cuMemsetD8Async", "cuMemsetD8Async", ClassCopy, false},
	APICuMemsetD16Async:          {"cuMemsetD16Async", "cuMemsetD16Async", ClassCopy, false},
	APICuMemsetD32Async:          {"cuMemsetD32Async", "cuMemsetD32Async", ClassCopy, false},
	APICuMemsetD2D8:              {"cuMemsetD2D8", "cuMemsetD2D8", ClassCopy, false},
	APICuMemsetD2D16:             {"cuMemsetD2D16", "cuMemsetD2D16", ClassCopy, false},
	APICuMemsetD2D32:             {"cuMemsetD2D32", "cuMemsetD2D32", ClassCopy, false},
	APICuMemsetD2D8Async:         {"cuMemsetD2D8Async", "cuMemsetD2D8Async", ClassCopy, false},
	APICuMemsetD2D16Async:        {"cuMemsetD2D16Async", "cuMemsetD2D16Async", ClassCopy, false},
	APICuMemsetD2D32Async:        {"cuMemsetD2D32Async", "cuMemsetD2D32Async", ClassCopy, false},
	APICuCtxSynchronize:          {"cuCtxSynchronize", "cuCtxSynchronize", ClassSync, false},
	APICuStreamSynchronize:       {"cuStreamSynchronize", "cuStreamSynchronize", ClassSync, false},
	APICuEventSynchronize:        {"cuEventSynchronize", "cuEventSynchronize", ClassSync, false},
	APICuStreamWaitEvent:         {"cuStreamWaitEvent", "cuStreamWaitEvent", ClassSync, false},
	APICuCtxCreate:               {"cuCtxCreate", "cuCtxCreate", ClassContext, false},
	APICuDevicePrimaryCtxRetain:  {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", ClassContext, false},
	APICuCtxDestroy:              {"cuCtxDestroy", "cuCtxDestroy", ClassContext, false},
	APICuModuleLoadData:          {"cuModuleLoadData", "cuModuleLoadData", ClassModule, false},
	APICuModuleLoadDataEx:        {"cuModuleLoadDataEx", "cuModuleLoadDataEx", ClassModule, false},
	APICuModuleLoadFatBinary:     {"cuModuleLoadFatBinary", "cuModuleLoadFatBinary", ClassModule, false},
	APICuLibraryLoadData:         {"cuLibraryLoadData", "cuLibraryLoadData", ClassModule, false},
	APICuModuleGetFunction:       {"cuModuleGetFunction", "cuModuleGetFunction", ClassModule, false},
	APICuLibraryGetKernel:        {"cuLibraryGetKernel", "cuLibraryGetKernel", ClassModule, false},
	APICuKernelGetFunction:       {"cuKernelGetFunction", "cuKernelGetFunction", ClassModule, false},
	APICudaRegisterFunction:      {"__cudaRegisterFunction", "cudaRegisterFunction", ClassModule, true},
	APICuCtxCreateV3:             {"cuCtxCreate", "cuCtxCreate_v3", ClassContext, false},
	APICuCtxCreateV4:             {"cuCtxCreate", "cuCtxCreate_v4", ClassContext, false},
	APICuModuleLoad:              {"cuModuleLoad", "cuModuleLoad", ClassModule, false},
	APICuLibraryLoadFromFile:     {"cuLibraryLoadFromFile", "cuLibraryLoadFromFile", ClassModule, false},
}

// Known reports whether a is a defined API.
func (a API) Known() bool { return a < APIMax && apis[a].name != "" }

// String is the function's name without version suffix, as reported.
func (a API) String() string {
	if a.Known() {
		return apis[a].name
	}
	return "unknown"
}

// EnumName is the suffix of the enumerator in gpuext_abi.h (GPUEXT_API_<EnumName>).
func (a API) EnumName() string {
	if a.Known() {
		return apis[a].enum
	}
	return ""
}

// Class is the API's class.
func (a API) Class() Class {
	if a.Known() {
		return apis[a].class
	}
	return ClassNone
}

// Runtime reports whether a is a CUDA runtime API (its result is a cudaError_t).
func (a API) Runtime() bool { return a.Known() && apis[a].runtime }

// APIs returns every defined API in id order.
func APIs() []API {
	var out []API
	for i := range apis {
		if apis[i].name != "" {
			out = append(out, API(i))
		}
	}
	return out
}
