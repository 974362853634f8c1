package cudaprobe

import (
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// Cookie bits, from bpf/include/gpuext_abi.h (GPUEXT_CK_*).
const (
	ckStack     = 1 << 16
	ckLaunchCfg = 1 << 17
	ckMemcpy2D  = 1 << 18
	ckMemcpy3D  = 1 << 19
	ckEntryOnly = 1 << 20
	ckOutShift  = 24
	ckNameShift = 28
)

func out(i uint64) uint64  { return i << ckOutShift }
func name(i uint64) uint64 { return i << ckNameShift }

// probe says how to read one exported function.
type probe struct {
	api   ev.API
	flags uint64 // cookie bits above the API id
}

func (p probe) cookie() uint64 { return uint64(p.api) | p.flags }

// symbols maps every probed exported symbol to its API and how to read it.
// _ptsz/_ptds are the per-thread-default-stream entry points that CUDA 12+
// runtimes resolve through cuGetProcAddress; versioned names are what the
// headers' macros call. Unknown to a library → simply not attached.
var symbols = map[string]probe{
	// launches
	"cuLaunchKernel":                 {ev.APICuLaunchKernel, ckStack},
	"cuLaunchKernel_ptsz":            {ev.APICuLaunchKernel, ckStack},
	"cuLaunchKernelEx":               {ev.APICuLaunchKernelEx, ckLaunchCfg},
	"cuLaunchKernelEx_ptsz":          {ev.APICuLaunchKernelEx, ckLaunchCfg},
	"cuLaunchCooperativeKernel":      {ev.APICuLaunchCooperativeKernel, ckStack},
	"cuLaunchCooperativeKernel_ptsz": {ev.APICuLaunchCooperativeKernel, ckStack},
	"cuGraphLaunch":                  {ev.APICuGraphLaunch, 0},
	"cuGraphLaunch_ptsz":             {ev.APICuGraphLaunch, 0},
	"cudaLaunchKernel":               {ev.APICudaLaunchKernel, ckStack},
	"cudaLaunchKernel_ptsz":          {ev.APICudaLaunchKernel, ckStack},
	"cudaLaunchKernelExC":            {ev.APICudaLaunchKernelExC, ckLaunchCfg},
	"cudaLaunchKernelExC_ptsz":       {ev.APICudaLaunchKernelExC, ckLaunchCfg},
	"cudaGraphLaunch":                {ev.APICudaGraphLaunch, 0},
	"cudaGraphLaunch_ptsz":           {ev.APICudaGraphLaunch, 0},
	"__cudaRegisterFunction":         {ev.APICudaRegisterFunction, name(4)},

	// memory
	"cuMemAlloc_v2":              {ev.APICuMemAlloc, out(1)},
	"cuMemAllocManaged":          {ev.APICuMemAllocManaged, out(1)},
	"cuMemAllocAsync":            {ev.APICuMemAllocAsync, out(1)},
	"cuMemAllocAsync_ptsz":       {ev.APICuMemAllocAsync, out(1)},
	"cuMemAllocHost_v2":          {ev.APICuMemAllocHost, out(1)},
	"cuMemHostAlloc":             {ev.APICuMemHostAlloc, out(1)},
	"cuMemFree_v2":               {ev.APICuMemFree, 0},
	"cuMemFreeAsync":             {ev.APICuMemFreeAsync, 0},
	"cuMemFreeAsync_ptsz":        {ev.APICuMemFreeAsync, 0},
	"cuMemFreeHost":              {ev.APICuMemFreeHost, 0},
	"cuMemPrefetchAsync":         {ev.APICuMemPrefetchAsync, 0},
	"cuMemPrefetchAsync_ptsz":    {ev.APICuMemPrefetchAsync, 0},
	"cuMemPrefetchAsync_v2":      {ev.APICuMemPrefetchAsyncV2, 0},
	"cuMemPrefetchAsync_v2_ptsz": {ev.APICuMemPrefetchAsyncV2, 0},
	"cuMemAdvise":                {ev.APICuMemAdvise, 0},
	"cuMemAdvise_v2":             {ev.APICuMemAdviseV2, 0},

	// copies
	"cuMemcpy":                    {ev.APICuMemcpy, 0},
	"cuMemcpy_ptds":               {ev.APICuMemcpy, 0},
	"cuMemcpyAsync":               {ev.APICuMemcpyAsync, 0},
	"cuMemcpyAsync_ptsz":          {ev.APICuMemcpyAsync, 0},
	"cuMemcpyHtoD_v2":             {ev.APICuMemcpyHtoD, 0},
	"cuMemcpyHtoD_v2_ptds":        {ev.APICuMemcpyHtoD, 0},
	"cuMemcpyDtoH_v2":             {ev.APICuMemcpyDtoH, 0},
	"cuMemcpyDtoH_v2_ptds":        {ev.APICuMemcpyDtoH, 0},
	"cuMemcpyDtoD_v2":             {ev.APICuMemcpyDtoD, 0},
	"cuMemcpyDtoD_v2_ptds":        {ev.APICuMemcpyDtoD, 0},
	"cuMemcpyHtoDAsync_v2":        {ev.APICuMemcpyHtoDAsync, 0},
	"cuMemcpyHtoDAsync_v2_ptsz":   {ev.APICuMemcpyHtoDAsync, 0},
	"cuMemcpyDtoHAsync_v2":        {ev.APICuMemcpyDtoHAsync, 0},
	"cuMemcpyDtoHAsync_v2_ptsz":   {ev.APICuMemcpyDtoHAsync, 0},
	"cuMemcpyDtoDAsync_v2":        {ev.APICuMemcpyDtoDAsync, 0},
	"cuMemcpyDtoDAsync_v2_ptsz":   {ev.APICuMemcpyDtoDAsync, 0},
	"cuMemcpyPeer":                {ev.APICuMemcpyPeer, 0},
	"cuMemcpyPeer_ptds":           {ev.APICuMemcpyPeer, 0},
	"cuMemcpyPeerAsync":           {ev.APICuMemcpyPeerAsync, 0},
	"cuMemcpyPeerAsync_ptsz":      {ev.APICuMemcpyPeerAsync, 0},
	"cuMemcpy2D_v2":               {ev.APICuMemcpy2D, ckMemcpy2D},
	"cuMemcpy2D_v2_ptds":          {ev.APICuMemcpy2D, ckMemcpy2D},
	"cuMemcpy2DAsync_v2":          {ev.APICuMemcpy2DAsync, ckMemcpy2D},
	"cuMemcpy2DAsync_v2_ptsz":     {ev.APICuMemcpy2DAsync, ckMemcpy2D},
	"cuMemcpy2DUnaligned_v2":      {ev.APICuMemcpy2DUnaligned, ckMemcpy2D},
	"cuMemcpy2DUnaligned_v2_ptds": {ev.APICuMemcpy2DUnaligned, ckMemcpy2D},
	"cuMemcpy3D_v2":               {ev.APICuMemcpy3D, ckMemcpy3D},
	"cuMemcpy3D_v2_ptds":          {ev.APICuMemcpy3D, ckMemcpy3D},
	"cuMemcpy3DAsync_v2":          {ev.APICuMemcpy3DAsync, ckMemcpy3D},
	"cuMemcpy3DAsync_v2_ptsz":     {ev.APICuMemcpy3DAsync, ckMemcpy3D},

	// sets
	"cuMemsetD8_v2":           {ev.APICuMemsetD8, 0},
	"cuMemsetD8_v2_ptds":      {ev.APICuMemsetD8, 0},
	"cuMemsetD16_v2":          {ev.APICuMemsetD16, 0},
	"cuMemsetD16_v2_ptds":     {ev.APICuMemsetD16, 0},
	"cuMemsetD32_v2":          {ev.APICuMemsetD32, 0},
	"cuMemsetD32_v2_ptds":     {ev.APICuMemsetD32, 0},
	"cuMemsetD8Async":         {ev.APICuMemsetD8Async, 0},
	"cuMemsetD8Async_ptsz":    {ev.APICuMemsetD8Async, 0},
	"cuMemsetD16Async":        {ev.APICuMemsetD16Async, 0},
	"cuMemsetD16Async_ptsz":   {ev.APICuMemsetD16Async, 0},
	"cuMemsetD32Async":        {ev.APICuMemsetD32Async, 0},
	"cuMemsetD32Async_ptsz":   {ev.APICuMemsetD32Async, 0},
	"cuMemsetD2D8_v2":         {ev.APICuMemsetD2D8, 0},
	"cuMemsetD2D8_v2_ptds":    {ev.APICuMemsetD2D8, 0},
	"cuMemsetD2D16_v2":        {ev.APICuMemsetD2D16, 0},
	"cuMemsetD2D16_v2_ptds":   {ev.APICuMemsetD2D16, 0},
	"cuMemsetD2D32_v2":        {ev.APICuMemsetD2D32, 0},
	"cuMemsetD2D32_v2_ptds":   {ev.APICuMemsetD2D32, 0},
	"cuMemsetD2D8Async":       {ev.APICuMemsetD2D8Async, 0},
	"cuMemsetD2D8Async_ptsz":  {ev.APICuMemsetD2D8Async, 0},
	"cuMemsetD2D16Async":      {ev.APICuMemsetD2D16Async, 0},
	"cuMemsetD2D16Async_ptsz": {ev.APICuMemsetD2D16Async, 0},
	"cuMemsetD2D32Async":      {ev.APICuMemsetD2D32Async, 0},
	"cuMemsetD2D32Async_ptsz": {ev.APICuMemsetD2D32Async, 0},

	// synchronisation
	"cuCtxSynchronize":         {ev.APICuCtxSynchronize, 0},
	"cuStreamSynchronize":      {ev.APICuStreamSynchronize, 0},
	"cuStreamSynchronize_ptsz": {ev.APICuStreamSynchronize, 0},
	"cuEventSynchronize":       {ev.APICuEventSynchronize, 0},
	"cuStreamWaitEvent":        {ev.APICuStreamWaitEvent, 0},
	"cuStreamWaitEvent_ptsz":   {ev.APICuStreamWaitEvent, 0},

	// contexts and modules
	"cuCtxCreate_v2":           {ev.APICuCtxCreate, out(1)},
	"cuCtxCreate_v3":           {ev.APICuCtxCreateV3, out(1)},
	"cuCtxCreate_v4":           {ev.APICuCtxCreateV4, out(1)},
	"cuDevicePrimaryCtxRetain": {ev.APICuDevicePrimaryCtxRetain, out(1)},
	"cuCtxDestroy_v2":          {ev.APICuCtxDestroy, 0},
	"cuModuleLoadData":         {ev.APICuModuleLoadData, out(1)},
	"cuModuleLoadDataEx":       {ev.APICuModuleLoadDataEx, out(1)},
	"cuModuleLoadFatBinary":    {ev.APICuModuleLoadFatBinary, out(1)},
	"cuLibraryLoadData":        {ev.APICuLibraryLoadData, out(1)},
	"cuModuleLoad":             {ev.APICuModuleLoad, out(1)},
	"cuLibraryLoadFromFile":    {ev.APICuLibraryLoadFromFile, out(1)},
	"cuModuleGetFunction":      {ev.APICuModuleGetFunction, out(1) | name(3)},
	"cuLibraryGetKernel":       {ev.APICuLibraryGetKernel, out(1) | name(3)},
	"cuKernelGetFunction":      {ev.APICuKernelGetFunction, out(1)},
}

// APIOfSymbol returns the API that the probe on an exported symbol reports.
func APIOfSymbol(symbol string) (ev.API, bool) {
	p, ok := symbols[symbol]
	return p.api, ok
}
