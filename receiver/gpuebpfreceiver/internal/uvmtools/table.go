package uvmtools

// NewProcessorTable builds a table from processors known another way than
// the driver's tables: the UVM source's fentry backend learns each GPU's
// processor id and UUID from the driver's own structures. Entries with an
// index beyond V2's range are ignored; a later entry of the same index
// replaces an earlier one.
func NewProcessorTable(v Version, procs ...ProcessorInfo) ProcessorTable {
	t := ProcessorTable{Version: v, byIndex: make(map[Processor]ProcessorInfo, len(procs))}
	for _, p := range procs {
		if int(p.Index) < maxProcessorsV2 {
			t.byIndex[p.Index] = p
		}
	}
	return t
}
