// Command ptxtool parses, prints, checks and instruments PTX files with
// package devrt/ptx. It exists so that the rewriter's output can be fed to
// ptxas and run on a GPU machine, where there is no Go toolchain
// (bench/device/ptx_check.sh): build it here with CGO_ENABLED=0 and carry
// the binary.
//
//	ptxtool check FILE...          parse, write, re-parse; compare ASTs and token streams
//	ptxtool write [-o OUT] FILE    print FILE as ptx.Write does
//	ptxtool info FILE              kernels, parameters, registers, exits, global/generic accesses
//	ptxtool instrument [flags] FILE
//	    -fragment F   link fragment F (.func/.global only) first
//	    -kernels L    comma-separated names or globs (default: all)
//	    -entry/-exit/-load/-store P   comma-separated probe functions per site kind
//	    -probe FUNC:KIND[:GLOB,...]   a probe for one kind in some kernels (repeatable;
//	                                  KIND entry_block0: an entry probe of block 0 only)
//	    -generic -atomics             also generic ld/st, and atom/red as stores
//	    -o OUT -report R.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "check":
		err = check(os.Args[2:])
	case "write":
		err = write(os.Args[2:])
	case "info":
		err = info(os.Args[2:], os.Stdout)
	case "instrument":
		err = instrument(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ptxtool:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: ptxtool check|write|info|instrument [flags] FILE...")
	os.Exit(2)
}

func readModule(path string) (*ptx.Module, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := ptx.Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func output(path, text string) error {
	if path == "" || path == "-" {
		_, err := io.WriteString(os.Stdout, text)
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

func check(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("check: no files")
	}
	failed := 0
	for _, f := range args {
		b, err := os.ReadFile(f)
		if err == nil {
			_, err = ptx.RoundTrip(string(b), false)
		}
		if err != nil {
			failed++
			fmt.Printf("FAIL %s: %v\n", f, err)
			continue
		}
		fmt.Printf("ok   %s\n", f)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d files failed", failed, len(args))
	}
	return nil
}

func write(args []string) error {
	fs := flag.NewFlagSet("write", flag.ExitOnError)
	out := fs.String("o", "", "output file (default stdout)")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("write: one input file")
	}
	m, err := readModule(fs.Arg(0))
	if err != nil {
		return err
	}
	return output(*out, ptx.Write(m))
}

func info(args []string, w io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("info: one input file")
	}
	m, err := readModule(args[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "version %s target %s address_size %d\n", m.Version, strings.Join(m.Target, ","), m.AddressSize)
	for _, f := range m.Functions() {
		kind := "func"
		if f.Entry {
			kind = "entry"
		}
		if f.Body == nil {
			fmt.Fprintf(w, "%s %s %s (declaration)\n", f.Linkage, kind, f.Name)
			continue
		}
		regs := f.RegisterCounts()
		var rs []string
		for t, n := range regs {
			rs = append(rs, fmt.Sprintf("%s:%d", t, n))
		}
		sort.Strings(rs)
		loads, stores, generic := 0, 0, 0
		for _, a := range f.MemAccesses(true) {
			if a.Generic {
				generic++
			}
			if a.Access == ptx.AccessLoad {
				loads++
			} else {
				stores++
			}
		}
		fmt.Fprintf(w, "%s %s %s params=%d regs=[%s] labels=%d exits=%d loads=%d stores/atomics=%d (generic %d) id=0x%016x\n",
			f.Linkage, kind, f.Name, len(f.Params), strings.Join(rs, " "), len(f.Labels()), len(f.Exits()), loads, stores, generic, ptx.KernelID(f.Name))
	}
	return nil
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func instrument(args []string) error {
	fs := flag.NewFlagSet("instrument", flag.ExitOnError)
	frag := fs.String("fragment", "", "fragment to link first")
	kernels := fs.String("kernels", "", "kernel names or globs, comma-separated (default all)")
	entry := fs.String("entry", "", "probes at entry")
	exit := fs.String("exit", "", "probes at exits")
	load := fs.String("load", "", "probes before loads")
	store := fs.String("store", "", "probes before stores")
	var probes probeFlags
	fs.Var(&probes, "probe", "FUNC:KIND[:GLOB,...] attaches FUNC at entry|exit|load|store sites of the kernels GLOB selects (repeatable)")
	carry := fs.String("carry", "", "EXIT=ENTRY,...: exit probe EXIT gets entry probe ENTRY's return value as ctx->entry_ret")
	generic := fs.Bool("generic", false, "also generic ld/st")
	atomics := fs.Bool("atomics", false, "atom/red as store sites")
	inline := fs.Bool("inline", false, "copy the entry and exit probes' bodies into the kernels instead of calling them")
	out := fs.String("o", "", "output file (default stdout)")
	report := fs.String("report", "", "write the report as JSON here")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("instrument: one input file")
	}
	m, err := readModule(fs.Arg(0))
	if err != nil {
		return err
	}
	if *frag != "" {
		b, err := os.ReadFile(*frag)
		if err != nil {
			return err
		}
		fm, err := ptx.ParseFragment(string(b))
		if err != nil {
			return fmt.Errorf("%s: %w", *frag, err)
		}
		if err := ptx.Link(m, fm); err != nil {
			return err
		}
	}
	exits, probes, err := carries(list(*exit), probes, list(*carry))
	if err != nil {
		return err
	}
	rep, err := ptx.Instrument(m, ptx.Spec{
		Kernels: list(*kernels), Entry: list(*entry), Exit: exits, Load: list(*load), Store: list(*store),
		Probes: probes, Generic: *generic, Atomics: *atomics, Inline: *inline,
	})
	if err != nil {
		return err
	}
	for _, k := range rep.Kernels {
		fmt.Fprintf(os.Stderr, "instrumented %s: entry %d exit %d load %d store %d inlined %d\n", k.Name, k.Entry, k.Exit, k.Load, k.Store, k.Inlined)
		for _, why := range k.NotInlined {
			fmt.Fprintf(os.Stderr, "  called, not inlined: %s\n", why)
		}
	}
	for _, r := range rep.Refused {
		fmt.Fprintf(os.Stderr, "refused %s: %s\n", r.Kernel, r.Reason)
	}
	if *report != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*report, b, 0o644); err != nil {
			return err
		}
	}
	return output(*out, ptx.Write(m))
}

// carries applies -carry EXIT=ENTRY pairs: an exit probe of -exit moves to
// probes with its Carry, one of -probe gets it; the -exit list left and the
// probes are returned.
func carries(exits []string, probes probeFlags, pairs []string) ([]string, probeFlags, error) {
	for _, pair := range pairs {
		x, e, ok := strings.Cut(pair, "=")
		if !ok || x == "" || e == "" {
			return nil, nil, fmt.Errorf("-carry: want EXIT=ENTRY, got %q", pair)
		}
		found := false
		if i := slices.Index(exits, x); i >= 0 {
			exits = slices.Delete(exits, i, i+1)
			probes = append(probes, ptx.Probe{Func: x, Kind: ptx.SiteExit, Carry: e})
			found = true
		}
		for i := range probes {
			if probes[i].Func == x && probes[i].Kind == ptx.SiteExit {
				probes[i].Carry, found = e, true
			}
		}
		if !found {
			return nil, nil, fmt.Errorf("-carry %s: %s is not an exit probe", pair, x)
		}
	}
	return exits, probes, nil
}

// probeFlags collects -probe FUNC:KIND[:GLOB,...] values.
type probeFlags []ptx.Probe

func (p *probeFlags) String() string { return fmt.Sprint(*p) }

func (p *probeFlags) Set(v string) error {
	parts := strings.SplitN(v, ":", 3)
	if len(parts) < 2 || parts[0] == "" {
		return fmt.Errorf("want FUNC:KIND[:GLOB,...], got %q", v)
	}
	kinds := map[string]ptx.SiteKind{"entry": ptx.SiteEntry, "entry_block0": ptx.SiteEntry, "exit": ptx.SiteExit, "load": ptx.SiteLoad, "store": ptx.SiteStore}
	k, ok := kinds[parts[1]]
	if !ok {
		return fmt.Errorf("site kind %q: want entry, entry_block0 (block 0 only), exit, load or store", parts[1])
	}
	pr := ptx.Probe{Func: parts[0], Kind: k, FirstBlock: parts[1] == "entry_block0"}
	if len(parts) == 3 {
		pr.Kernels = list(parts[2])
	}
	*p = append(*p, pr)
	return nil
}
