// Package faultpattern classifies the recent GPU page-fault address stream
// of a process — the faults NVIDIA's UVM driver reports, each with an
// address, an access type and a timestamp — as sequential, strided, random
// or a hot set, with a confidence. The receiver exports the result; the
// policy processor reuses it to pick prefetch and eviction policies.
//
// A Classifier keeps a ring of the last Window samples (default 1024); the
// window is what "recent" means, so a change of behaviour shows once the
// new behaviour fills about half of it. Classify looks at the window in
// linear time and allocates nothing.
//
// # What the driver does to the stream
//
// UVM fetches faults from the GPU's fault buffer in batches (up to 256 by
// default), sorts each batch by address, merges the reports of one page
// from several TLBs and services (and reports) them in that order. Some
// faults never happen because prefetching migrated their pages first. So a
// sweep arrives locally reordered (ascending within a batch even when the
// sweep descends), with repeated reports of a page back to back, and with
// holes. The method is built to be blind to exactly these distortions.
//
// # Method
//
// Addresses are reduced to page numbers (Addr / PageSize).
//
//  0. Order. Samples are analysed in TimeNs order (ties in order of Add).
//     Given the GPU's fault timestamps this undoes the batch sort; given host
//     report times it is the order of Add.
//
//  1. Touches. Consecutive samples of the same page are merged into one
//     touch: they are one fault reported several times.
//
//  2. Reuse. A touch is a reuse if its page was first touched more than
//     ReuseDistance touches earlier (default 64, at most an eighth of the
//     window; found with a hash table of first-touch indices). A closer
//     repeat is the same access reported again. reuse = reuses / touches.
//     If reuse ≥ 0.5 the window is a HotSet: refaulting a page means it was
//     evicted and is needed again, which matters more to policy than any
//     order of the faults (a loop that sweeps a buffer of fewer pages than
//     half the window again and again is a HotSet, not Sequential).
//     WorkingSetPages is the number of distinct pages reused.
//
//  3. Spatial structure. The distinct pages are sorted by address and the
//     gaps between neighbours counted (a second hash table). The most
//     common gap G and its share of all gaps say what lattice the pages lie
//     on, whatever order they were touched in. If G > 1 page and its share
//     is ≥ 0.5, the window is a stride candidate with step G; otherwise the
//     step is one page (gaps of 2 or 3 left by faults that prefetching
//     removed do not displace gap 1 as the most common until most faults
//     are gone).
//
//  4. Temporal structure along the address order. Each distinct page u[i]
//     is paired with the page lag ranks further in address order,
//     u[i+lag]. The pair is a run pair if the two lie at most 4·lag steps
//     apart (a run may miss 3 of 4 steps), and its direction is which of
//     the two was touched first. A reordering that moves faults by fewer
//     than lag distinct pages cannot flip that direction. Consecutive run
//     pairs of a sweep have the same direction; in a window touched in no
//     particular order they agree half of the time. The sweep evidence at
//     a lag is
//
//     (run pairs / pairs) × max(0, 2·agree/(agree+disagree) − 1)
//
//     0 for random order, 1 for a single clean sweep, and about the
//     fraction of the window a sweep covers in a mixture. It is computed at
//     lags 8, 16, 32, ... up to a quarter of the distinct pages and the
//     largest value kept: short lags see short runs and interleaved
//     streams, long lags see through heavy reordering. The direction is
//     the majority direction at the longest lag at which a quarter of the
//     pairs are run pairs: it sees past the ascending order of each batch.
//
//  5. Parallel sweep. A GPU kernel sweeps a buffer with many thread blocks
//     at once: its faults are short runs from many places, interleaved,
//     which the sweep evidence does not see. When the evidence is below
//     0.6 but the distinct pages are dense (most common gap one page with
//     a share of at least 0.5, and at least a tenth of their address span
//     covered) and at least a fifth of consecutive touches are within 4
//     pages of each other, the window is Sequential, its direction that of
//     most such steps. A dense random permutation has almost no such steps
//     and stays Random; short sequential chunks scattered over a large
//     range fail the density test and stay Random.
//
//     A buffer much larger than the window (64 MiB on an H200: 67 runs of
//     about 11 pages over 15489 pages in 1024 faults) is swept by fronts
//     too far apart to be dense and too interleaved to be adjacent touch
//     to touch, but each front continues: a page within 4 below (or
//     above) a touch was first touched at most 256 touches earlier. A
//     sparse window (under a tenth of its span covered) with a one-page
//     gap share of at least 0.5, fewer than a fifth of consecutive touches
//     adjacent, and at least half of its touches continuing a front, is a
//     parallel sweep as well. Chunks read one after the other are adjacent
//     touch to touch and stay Random; chunks gathered by many threads at
//     once are, in one window, indistinguishable from such a sweep.
//
//  6. Decision. Sweep evidence ≥ 0.6: Strided with Stride ±G·PageSize if
//     the window was a stride candidate, else Sequential with Stride
//     ±PageSize. Otherwise Random.
//
// Every step is linear in the window: the two sorts (of the distinct pages,
// and of the samples by TimeNs when they were not added in TimeNs order)
// are radix sorts, skipped when the input is already in order.
//
// # Confidence
//
// Each pattern's confidence is the fraction of the window it explains,
// times a sample-size factor sqrt(min(1, touches/256)) (a fraction measured
// on n items has a standard error of about 1/sqrt(n)):
//
//   - HotSet: min(1, reuse/0.8) — a finite window cannot show reuse
//     near 1 (first touches, and touches in the first ReuseDistance, are
//     not reuses).
//   - Sequential: the sweep evidence; for a parallel sweep, the share of
//     the one-page gap × min(1, adjacent steps/0.3), or × min(1,
//     continuing touches/0.8) for interleaved fronts, whichever is larger.
//   - Strided: the sweep evidence × the share of the most common gap.
//   - Random: 1 − the strongest structure found, max(sweep evidence,
//     reuse/0.5), so a window just short of a pattern is a weak Random.
//
// Fewer than MinSamples samples (default 64), or fewer than 8 touches,
// give Unknown with confidence 0.
//
// # Interleaved streams
//
// Two tensors read in lockstep (A0 B0 A1 B1 ...) are reported as
// Sequential with high confidence, and two strided tensors as Strided: the
// sweep test pairs pages that are neighbours in address space, so each
// tensor counts as its own run, and the address alternation between the two
// tensors — which would look like a large stride followed by its negative
// in a histogram of consecutive deltas — plays no part. That is the answer
// policy wants: a per-region next-page prefetcher (UVM's prefetcher works
// per 2 MiB VA block) serves each stream. Sweeps in opposite directions are
// Sequential too; Stride then carries the majority direction only.
//
// # Limits
//
//   - A window shows a hot set of at most about half its size: a set of W
//     pages sampled uniformly needs several touches per page.
//   - Strides are measured in pages: a stride that is not a multiple of
//     PageSize shows as a mix of gaps. A sweep that faults once per fixed
//     region because prefetch covers the rest of it is Strided by that
//     region, which is what its faults are.
//   - Short sequential runs at random places (chunks of fewer than about
//     20 pages) are Random; longer ones, in a window of no reuse, are
//     Sequential.
//   - A sweep reordered by more than a quarter of the window's distinct
//     pages is Random.
//   - One Classifier per stream: faults of several GPUs, whose timestamps
//     come from different clocks, should not share one.
package faultpattern
