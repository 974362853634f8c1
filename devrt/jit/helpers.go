package jit

// Helper ids a device probe may call (enum gpuext_dev_helper in
// gpuext_abi.h; bpftime's 501-511 where they exist).
const (
	HelperMapLookup     = 1
	HelperMapUpdate     = 2
	HelperMapDelete     = 3
	HelperKtime         = 5
	HelperRingbufOutput = 130
	HelperGlobaltimer   = 502
	HelperBlockIdx      = 503
	HelperBlockDim      = 504
	HelperThreadIdx     = 505
	HelperGridDim       = 508
	HelperSMID          = 509
	HelperWarpID        = 510
	HelperLaneID        = 511
	HelperNSMID         = 540
	HelperMapAdd        = 541
	HelperGlobalWarp    = 542
	HelperBlockLinear   = 543
	HelperActiveLanes   = 544
	HelperGridID        = 545
	HelperBlockWeight   = 546
	HelperRingClaim     = 547
	HelperRingOutputAt  = 548
)

// helperNames is every helper the verifier accepts.
var helperNames = map[int64]string{
	HelperMapLookup:     "map_lookup_elem",
	HelperMapUpdate:     "map_update_elem",
	HelperMapDelete:     "map_delete_elem",
	HelperKtime:         "ktime_get_ns",
	HelperRingbufOutput: "ringbuf_output",
	HelperGlobaltimer:   "get_globaltimer",
	HelperBlockIdx:      "get_block_idx",
	HelperBlockDim:      "get_block_dim",
	HelperThreadIdx:     "get_thread_idx",
	HelperGridDim:       "get_grid_dim",
	HelperSMID:          "get_sm_id",
	HelperWarpID:        "get_warp_id",
	HelperLaneID:        "get_lane_id",
	HelperNSMID:         "get_nsmid",
	HelperMapAdd:        "map_add",
	HelperGlobalWarp:    "get_global_warp",
	HelperBlockLinear:   "get_block_linear",
	HelperActiveLanes:   "get_active_lanes",
	HelperGridID:        "get_grid_id",
	HelperBlockWeight:   "get_block_weight",
	HelperRingClaim:     "ring_claim",
	HelperRingOutputAt:  "ring_output_at",
}

// scalarHelperMax is the largest value a helper without arguments returns
// (its result range for the verifier).
var scalarHelperMax = map[int64]uint64{
	HelperKtime:       ^uint64(0),
	HelperGlobaltimer: ^uint64(0),
	HelperSMID:        0xffffffff,
	HelperWarpID:      0xffffffff,
	HelperLaneID:      31,
	HelperNSMID:       0xffffffff,
	HelperGlobalWarp:  ^uint64(0),
	HelperBlockLinear: ^uint64(0),
	HelperActiveLanes: 32,
	HelperGridID:      ^uint64(0),
	HelperBlockWeight: 1 << 16, // ptx.MaxBlockSample, 1 << ptx.MaxLaunchShift
}

// dim3Helpers write x, y and z through their three pointer arguments.
var dim3Helpers = map[int64]string{
	HelperBlockIdx:  "ctaid",
	HelperBlockDim:  "ntid",
	HelperThreadIdx: "tid",
	HelperGridDim:   "nctaid",
}
