package gpuextsim

import "math/rand/v2"

// Trace generators. Each is deterministic: the same arguments (and seed)
// give the same trace, so a policy comparison is a comparison of counts.
// Addresses start at base (use a 2 MiB aligned one) and are page addresses.

func page(base uint64, p int) uint64 { return base + uint64(p)*PageSize }

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// Sequential touches pages 0..pages-1 once each, in order.
func Sequential(pid uint32, base uint64, pages int) []Access {
	out := make([]Access, 0, pages)
	for p := 0; p < pages; p++ {
		out = append(out, Access{VA: page(base, p), PID: pid})
	}
	return out
}

// Stride touches count pages, stride pages apart: 0, stride, 2*stride, ...
func Stride(pid uint32, base uint64, stride, count int) []Access {
	out := make([]Access, 0, count)
	for i := 0; i < count; i++ {
		out = append(out, Access{VA: page(base, i*stride), PID: pid})
	}
	return out
}

// Random touches count pages drawn uniformly from pages 0..pages-1.
func Random(seed uint64, pid uint32, base uint64, pages, count int) []Access {
	r := rng(seed)
	out := make([]Access, 0, count)
	for i := 0; i < count; i++ {
		out = append(out, Access{VA: page(base, r.IntN(pages)), PID: pid})
	}
	return out
}

// HotSet repeats rounds of: every hot block touched hotTouches times (on
// random pages of its first 16), then a scan over the next scan blocks of
// a cold region of coldBlocks blocks (one page each, each cold block seen
// once per coldBlocks/scan rounds). With capacity between hot and
// hot+scan blocks, LRU lets each scan evict hot blocks; a frequency-based
// policy keeps them.
func HotSet(seed uint64, pid uint32, base uint64, hotBlocks, coldBlocks, scan, hotTouches, rounds int) []Access {
	r := rng(seed)
	var out []Access
	cold := base + uint64(hotBlocks)*BlockSize
	next := 0
	for round := 0; round < rounds; round++ {
		for t := 0; t < hotTouches; t++ {
			for b := 0; b < hotBlocks; b++ {
				out = append(out, Access{VA: base + uint64(b)*BlockSize + uint64(r.IntN(16))*PageSize, PID: pid})
			}
		}
		for i := 0; i < scan && coldBlocks > 0; i++ {
			out = append(out, Access{VA: cold + uint64(next)*BlockSize, PID: pid})
			next = (next + 1) % coldBlocks
		}
	}
	return out
}

// TwoTenants interleaves a tenant hi reusing a working set of hiBlocks
// blocks with a tenant lo streaming through loBlocks blocks (one page per
// block, so lo never reuses soon): per round, hi touches each of its blocks
// once (random page of its first 16), lo touches loPerRound new blocks.
// Addresses: hi from base, lo from base + 1 GiB.
func TwoTenants(seed uint64, hi, lo uint32, base uint64, hiBlocks, loBlocks, loPerRound, rounds int) []Access {
	r := rng(seed)
	var out []Access
	loBase := base + 1<<30
	next := 0
	for round := 0; round < rounds; round++ {
		for b := 0; b < hiBlocks; b++ {
			out = append(out, Access{VA: base + uint64(b)*BlockSize + uint64(r.IntN(16))*PageSize, PID: hi})
			if b < loPerRound && loBlocks > 0 {
				out = append(out, Access{VA: loBase + uint64(next)*BlockSize, PID: lo})
				next = (next + 1) % loBlocks
			}
		}
		for b := hiBlocks; b < loPerRound && loBlocks > 0; b++ {
			out = append(out, Access{VA: loBase + uint64(next)*BlockSize, PID: lo})
			next = (next + 1) % loBlocks
		}
	}
	return out
}

// LCBE is a latency-critical task ("lc", pid lcPID) submitting a short job
// (lcJobNS) every periodNS, beside beTasks best-effort tasks ("be0",
// "be1", ..., pids lcPID+1...) that each keep a queue of long jobs
// (beJobNS) submitted at time 0, for lcJobs periods. Submit times of the LC
// jobs get a seeded jitter of up to a tenth of the period.
func LCBE(seed uint64, lcPID uint32, beTasks, lcJobs int, periodNS, lcJobNS, beJobNS uint64) ([]Task, []Job) {
	r := rng(seed)
	tasks := []Task{{PID: lcPID, Comm: "lc"}}
	for i := 0; i < beTasks; i++ {
		tasks = append(tasks, Task{PID: lcPID + 1 + uint32(i), Comm: "be" + string(rune('0'+i%10))})
	}
	var jobs []Job
	for i := 0; i < lcJobs; i++ {
		jitter := uint64(0)
		if periodNS >= 10 {
			jitter = r.Uint64N(periodNS / 10)
		}
		jobs = append(jobs, Job{Task: 0, SubmitNS: uint64(i)*periodNS + jitter, DurationNS: lcJobNS})
	}
	span := uint64(lcJobs) * periodNS
	for t := 1; t <= beTasks; t++ {
		n := 1
		if beJobNS > 0 {
			n = int(span/beJobNS) + 1
		}
		for i := 0; i < n; i++ {
			jobs = append(jobs, Job{Task: t, SubmitNS: 0, DurationNS: beJobNS})
		}
	}
	return tasks, jobs
}
