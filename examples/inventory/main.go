// Command inventory prints the accelerators of this machine (through NVML),
// of a go-nvml mock DGX, or of a declarative description.
//
//	go run ./examples/inventory                        # this machine, via NVML
//	go run ./examples/inventory -mock dgxh100 -json    # a mock DGX H100
//	go run ./examples/inventory -static "2x8:h100-80gb"
//	go run ./examples/inventory -static @cluster.json  # a JSON description
//
// Output is a table, or JSON with -json (accel.Cluster plus each device's
// NVLink peers). With -watch it then prints health events until
// interrupted. On a machine without the NVIDIA driver it prints one line,
// "NVML unavailable: …", and exits with status 2; bad flags also exit 2.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/accel/nvml"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a bad command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("inventory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: inventory [flags]\n\n"+
			"inventory lists accelerators (devices, types, NUMA, NVLink peers, health) of\n"+
			"this machine through NVML, of a go-nvml mock DGX, or of a static description.\n\nflags:\n")
		fs.PrintDefaults()
	}
	mock := fs.String("mock", "", "read a go-nvml mock preset: dgxa100, dgxh100, dgxh200 or dgxb200 (needs cgo)")
	static := fs.String("static", "", `read a description: shorthand such as "2x8:h100-80gb", JSON, or @FILE`)
	node := fs.String("node", "", "node name for NVML and mock inventories (default: host name, or the preset name)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	watch := fs.Bool("watch", false, "after printing, stream health events until interrupted")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "inventory: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *mock != "" && *static != "" {
		fmt.Fprintln(stderr, "inventory: use -mock or -static, not both")
		return 2
	}
	inv, source, closeInv, err := openInventory(*mock, *static, *node)
	if err != nil {
		fmt.Fprintln(stderr, oneLine(err))
		return 2
	}
	defer closeInv()
	c, err := inv.Snapshot(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "inventory:", oneLine(err))
		return 1
	}
	if *asJSON {
		err = printJSON(stdout, source, c)
	} else {
		err = printTable(stdout, source, c)
	}
	if err != nil {
		fmt.Fprintln(stderr, "inventory:", err)
		return 1
	}
	if *watch {
		return watchHealth(ctx, inv, *asJSON, stdout, stderr)
	}
	return 0
}

func openInventory(mock, static, node string) (accel.Inventory, string, func(), error) {
	switch {
	case static != "":
		spec := static
		if name, ok := strings.CutPrefix(static, "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				return nil, "", nil, fmt.Errorf("inventory: -static: %w", err)
			}
			spec = string(b)
		}
		s, err := accel.NewStaticSpec(spec)
		if err != nil {
			return nil, "", nil, fmt.Errorf("inventory: -static: %w", err)
		}
		return s, "static " + strings.TrimSpace(static), func() {}, nil
	case mock != "":
		if node == "" {
			node = mock
		}
		inv, err := openMock(mock, node)
		if err != nil {
			return nil, "", nil, fmt.Errorf("inventory: -mock: %w", err)
		}
		return inv, "mock " + mock, func() { _ = inv.Close() }, nil
	}
	var opts []nvml.Option
	if node != "" {
		opts = append(opts, nvml.WithNodeName(node))
	}
	inv, err := nvml.Open(opts...)
	if err != nil {
		return nil, "", nil, fmt.Errorf("NVML unavailable: %w", err)
	}
	return inv, "nvml", func() { _ = inv.Close() }, nil
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// peer is one NVLink neighbour of a device.
type peer struct {
	Index int `json:"index"`
	Lanes int `json:"lanes"`
}

type deviceView struct {
	accel.Device
	NVLinkPeers []peer `json:"nvlink_peers"`
}

type nodeView struct {
	Name    string       `json:"name"`
	Devices []deviceView `json:"devices"`
	Links   []accel.Link `json:"links,omitempty"`
}

type report struct {
	Source  string                `json:"source"`
	Devices int                   `json:"devices"`
	Types   map[accel.TypeKey]int `json:"types"` // all devices, healthy or not
	Healthy map[accel.TypeKey]int `json:"healthy"`
	Nodes   []nodeView            `json:"nodes"`
}

func peers(n accel.Node, i int) []peer {
	ps := []peer{}
	for _, j := range n.Peers(i) {
		ps = append(ps, peer{Index: j, Lanes: n.Lanes(i, j)})
	}
	return ps
}

func buildReport(source string, c accel.Cluster) report {
	r := report{Source: source, Devices: c.Size(), Types: map[accel.TypeKey]int{}, Healthy: c.Counts()}
	for _, n := range c.Nodes {
		nv := nodeView{Name: n.Name, Links: n.Links}
		for _, d := range n.Devices {
			r.Types[d.Type]++
			nv.Devices = append(nv.Devices, deviceView{Device: d, NVLinkPeers: peers(n, d.Index)})
		}
		r.Nodes = append(r.Nodes, nv)
	}
	return r
}

func printJSON(w io.Writer, source string, c accel.Cluster) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(buildReport(source, c))
}

func gib(b uint64) string {
	if b == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(b)/(1<<30), 'f', -1, 64) + " GiB"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// peerText renders NVLink peers as index ranges with their lane count,
// grouped by lane count, for example "0,2-7×18" or "1-2×1 3-4×2".
func peerText(ps []peer) string {
	if len(ps) == 0 {
		return "-"
	}
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b peer) int { return cmp.Or(cmp.Compare(a.Lanes, b.Lanes), cmp.Compare(a.Index, b.Index)) })
	var groups []string
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1].Lanes == ps[i].Lanes {
			j++
		}
		var ranges []string
		for a := i; a <= j; {
			b := a
			for b+1 <= j && ps[b+1].Index == ps[b].Index+1 {
				b++
			}
			r := strconv.Itoa(ps[a].Index)
			if b > a {
				r += "-" + strconv.Itoa(ps[b].Index)
			}
			ranges = append(ranges, r)
			a = b + 1
		}
		groups = append(groups, strings.Join(ranges, ",")+"×"+strconv.Itoa(ps[i].Lanes))
		i = j + 1
	}
	return strings.Join(groups, " ")
}

func printTable(w io.Writer, source string, c accel.Cluster) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tIDX\tTYPE\tMEMORY\tCC\tARCH\tNUMA\tPCI\tPOWER\tNVLINK PEERS×LANES\tHEALTH\tID")
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			health := "ok"
			if !d.Healthy {
				health = "FAULT: " + d.Fault
			}
			numa := "-"
			if d.NUMANode >= 0 {
				numa = strconv.Itoa(d.NUMANode)
			}
			power := "-"
			if d.PowerWatts > 0 {
				power = strconv.FormatFloat(d.PowerWatts, 'f', 0, 64) + " W"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, d.Index, d.Type, gib(d.MemoryBytes),
				dash(d.ComputeCapability), dash(d.Architecture), numa, dash(d.PCIBusID), power, peerText(peers(n, d.Index)), health, d.ID)
			for _, m := range d.Instances {
				fmt.Fprintf(tw, "%s\t%d.%d\t%s\t%s\t\t\t\t\t\t\t\t%s\n", n.Name, d.Index, m.Index, m.Type, gib(m.MemoryBytes), m.ID)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	counts := c.Counts()
	var parts []string
	for _, t := range c.Types() {
		parts = append(parts, fmt.Sprintf("%s×%d", t, counts[t]))
	}
	_, err := fmt.Fprintf(w, "%s: %d nodes, %d devices; healthy: %s\n", source, len(c.Nodes), c.Size(), strings.Join(parts, " "))
	return err
}

func watchHealth(ctx context.Context, inv accel.Inventory, asJSON bool, stdout, stderr io.Writer) int {
	hs, ok := inv.(accel.HealthSource)
	if !ok {
		fmt.Fprintln(stderr, "inventory: this inventory reports no health events")
		return 1
	}
	events, err := hs.Health(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "inventory: health:", oneLine(err))
		return 1
	}
	fmt.Fprintln(stderr, "watching health events; interrupt to stop")
	enc := json.NewEncoder(stdout)
	for ev := range events {
		if asJSON {
			_ = enc.Encode(ev)
			continue
		}
		fmt.Fprintf(stdout, "%s %s %s xid=%d critical=%v %s\n", ev.Time.Format("15:04:05"), ev.Device, ev.Kind, ev.Xid, ev.Critical, ev.Message)
	}
	return 0
}
