package proberegion

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
)

// Map names of the shipped probes (bpf/device/*.bpf.c).
const (
	MapBlockRing  = "gx_block_ring"  // block_sched: struct gpuext_dev_block
	MapLaunchRing = "gx_launch_ring" // launch_latency: struct gpuext_dev_launch
	MapSM         = "gx_sm"          // sm_load: struct gpuext_dev_sm per SM
	MapOcc        = "gx_occ"         // warp_occupancy: gpuext_dev_occ_key -> gpuext_dev_occ
)

// MaxRecords bounds the records one Read takes from each ring, so a process
// whose kernels write without pause cannot hold the reader.
const MaxRecords = 1 << 18

// ErrBroken is wrapped by every error of a region that is given up.
var ErrBroken = errors.New("proberegion: region broken")

// ErrShort is wrapped (with ErrBroken) when the file is shorter than the
// layout: devrt creates the file, then sizes it, so a new file may be
// seen short for a moment; a caller may try again a little later.
var ErrShort = errors.New("shorter than the layout")

// Region is one process's shared region, mapped.
type Region struct {
	layout gpumap.Layout
	mem    []byte
	// file is the whole mapping (mem, then in devrt's files the trailer
	// page, whose last bytes are devrt's device record: info, nil if
	// none); mem itself for FromBytes.
	file   []byte
	info   []byte
	mapped bool
	broken error
	path   string
	// tail and lost are each ring shard's cursor (the records consumed
	// so far, and those claimed and not whole yet: gpumap.RingCursor)
	// and each ring's records lost: the reader's own, never written
	// into the region, whose file devrt overwrites with its copy of the
	// device's memory.
	tail map[ringShard]gpumap.RingCursor
	lost map[string]uint64
	// occ holds the last Read's occupancy slots (Snapshot.Occupancy): a
	// poll reads tens of thousands, every 50 ms, so they are not
	// allocated anew each time.
	occ      []Occ
	resident []uint64 // Snapshot.OccResident's, likewise
}

// maxTrailerGap is the most bytes a file may have past the region for its
// last page to be read as devrt's trailer (page rounding and the page).
const maxTrailerGap = 1 << 20

// ringShard names one shard of a ring.
type ringShard struct {
	name  string
	shard uint64
}

// Open maps the region file at path for the probe set of layout. The file
// must be a regular file with one link, at least layout.Size bytes long.
// Map headers still zero are initialised (devrt writes the same headers,
// from the collector's answer, right after it sizes the file); headers
// that describe other maps make the region foreign (an error). Beyond
// that the reader never writes the region: devrt copies the device's
// memory over the file every GPUEXT_DEVRT_PROBE_SYNC_MS.
func Open(path string, layout gpumap.Layout) (*Region, error) {
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return FromFile(f, path, layout)
}

// FromFile is Open of a file the caller opened read-write (and closes:
// the mapping does not need it): one found in another process's root,
// opened without following links (internal/nsfs). path names it in errors.
func FromFile(f *os.File, path string, layout gpumap.Layout) (*Region, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrBroken, path)
	}
	if st.Nlink != 1 {
		return nil, fmt.Errorf("%w: %s has %d links", ErrBroken, path, st.Nlink)
	}
	if layout.Size == 0 || uint64(st.Size) < layout.Size {
		return nil, fmt.Errorf("%w: %s has %d bytes, the probe set's maps need %d (%w)", ErrBroken, path, st.Size, layout.Size, ErrShort)
	}
	// The trailer page too, when the file has one (devrt's device record,
	// whose copy times it updates; a file much longer is not devrt's).
	n, trailer := int(layout.Size), uint64(st.Size) >= layout.Size+devrtinject.DeviceTrailer &&
		uint64(st.Size) <= layout.Size+maxTrailerGap
	if trailer {
		n = int(st.Size)
	}
	file, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	r := &Region{layout: layout, mem: file[:layout.Size:layout.Size], file: file, mapped: true, path: path,
		tail: map[ringShard]gpumap.RingCursor{}, lost: map[string]uint64{}}
	if trailer {
		r.info = file[len(file)-devrtinject.DeviceInfoSize:]
	}
	if err := r.init(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// FromBytes makes a region over mem (tests, fuzzing): the same checks as
// Open but for the file's.
func FromBytes(mem []byte, layout gpumap.Layout) (*Region, error) {
	if layout.Size == 0 || uint64(len(mem)) < layout.Size {
		return nil, fmt.Errorf("%w: %d bytes, the probe set's maps need %d", ErrBroken, len(mem), layout.Size)
	}
	r := &Region{layout: layout, mem: mem[:layout.Size], file: mem[:layout.Size], path: "memory",
		tail: map[ringShard]gpumap.RingCursor{}, lost: map[string]uint64{}}
	if err := r.init(); err != nil {
		return nil, err
	}
	return r, nil
}

// init writes the headers of a fresh region and checks every header.
func (r *Region) init() error {
	return r.guard(func() error {
		fresh := true
		for _, m := range r.layout.Maps {
			if _, err := m.ReadHeader(gpumap.Region(r.mem)); !errors.Is(err, gpumap.ErrNotInitialised) {
				fresh = false
			}
		}
		if fresh {
			if err := r.layout.Init(r.mem); err != nil {
				return err
			}
		}
		for _, m := range r.layout.Maps {
			if _, err := m.ReadHeader(gpumap.Region(r.mem)); err != nil {
				return fmt.Errorf("%w: foreign region (another probe set's?): %v", ErrBroken, err)
			}
		}
		return nil
	})
}

// Path is the file the region was opened from.
func (r *Region) Path() string { return r.path }

// Broken is why the region was given up, or nil.
func (r *Region) Broken() error { return r.broken }

// Close unmaps the region.
func (r *Region) Close() error {
	if r.mem == nil {
		return nil
	}
	var err error
	if r.mapped {
		err = unix.Munmap(r.file)
	}
	r.mem, r.file, r.info = nil, nil, nil
	return err
}

// guard runs f, which touches the mapping. A fault inside it (the file was
// truncated under the mapping) or an error breaks the region.
func (r *Region) guard(f func() error) (err error) {
	if r.broken != nil {
		return r.broken
	}
	if r.mem == nil {
		return fmt.Errorf("%w: closed", ErrBroken)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			fault, ok := p.(interface{ Addr() uintptr })
			base := uintptr(unsafe.Pointer(unsafe.SliceData(r.file)))
			if !ok || fault.Addr() < base || fault.Addr() >= base+uintptr(len(r.file)) {
				panic(p)
			}
			err = fmt.Errorf("%w: fault at offset %d of %s (file truncated?)", ErrBroken, fault.Addr()-base, r.path)
		}
		if err != nil {
			if !errors.Is(err, ErrBroken) {
				err = fmt.Errorf("%w: %v", ErrBroken, err)
			}
			r.broken = err
		}
	}()
	return f()
}
