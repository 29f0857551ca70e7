package goodput

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The default-form study of issue 16: fit both forms on each model's
// placements file of an accelerator type and measure the step-time error
// on the shapes of its scalability file that the placements never ran
// (all its shapes where none is new). t4 is Pollux's data (testdata,
// Apache-2.0; 1–4 nodes fitted, 6–16 evaluated). Sia's dgx-ext (DGX A100)
// and rtx (RTX 2080 Ti) profiles have no licence and are not in testdata:
// point GOODSCHED_SIA_TRACES at a copy of sia-simulator/traces
// (github.com/siasosp23/artifacts) to include them:
//
//	GOODSCHED_SIA_TRACES=/path/to/sia-simulator/traces go test ./goodput -run TestFormStudy -v
//
// Sia's placements run on at most two nodes, where FormAllReduce has no
// tree and equals FormPollux, so both forms predict the same there; the
// study also fits rtx's three-node rows with at most 12 GPUs and evaluates
// the larger three-node shapes ("rtx+3n"), where the forms differ.

// studyCell is one (model, type, form): errors on the evaluated rows.
type studyCell struct {
	model, typ   string
	form         Form
	median, p90  float64
	rows, unseen int
}

func quantileOf(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

func readRows(t *testing.T, path string, read func(*os.File) ([]ProfileRow, error)) []ProfileRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := read(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// studyOne fits form on fit and evaluates on eval's rows of unseen shapes
// (all rows if every shape was seen).
func studyOne(t *testing.T, model, typ string, form Form, fit, eval []ProfileRow) studyCell {
	t.Helper()
	seen := map[[2]int]bool{}
	for _, r := range fit {
		seen[[2]int{r.Nodes, r.Replicas}] = true
	}
	var unseen []ProfileRow
	for _, r := range eval {
		if !seen[[2]int{r.Nodes, r.Replicas}] {
			unseen = append(unseen, r)
		}
	}
	if len(unseen) > 0 {
		eval = unseen
	}
	p, _, err := Fit(aggregate(fit), FitOptions{Form: form})
	if err != nil {
		t.Fatalf("%s/%s/%v: %v", model, typ, form, err)
	}
	errs := make([]float64, 0, len(eval))
	for _, r := range eval {
		errs = append(errs, math.Abs(p.StepSeconds(r.Nodes, r.Replicas, r.Local, 0)-r.StepSeconds)/r.StepSeconds)
	}
	return studyCell{model: model, typ: typ, form: form, median: quantileOf(errs, 0.5), p90: quantileOf(errs, 0.9),
		rows: len(eval), unseen: len(unseen)}
}

func TestFormStudy(t *testing.T) {
	forms := []Form{FormPollux, FormAllReduce}
	var cells []studyCell
	for _, model := range models {
		fit := readProfile(t, model, "placements.csv")
		eval := readProfile(t, model, "scalability.csv")
		for _, f := range forms {
			cells = append(cells, studyOne(t, model, "t4", f, fit, eval))
		}
	}
	sia := os.Getenv("GOODSCHED_SIA_TRACES")
	if sia != "" {
		for _, model := range models {
			for _, typ := range []string{"dgx-ext", "rtx"} {
				dir := filepath.Join(sia, model)
				fit := readRows(t, filepath.Join(dir, "placements-"+typ+".csv"), func(f *os.File) ([]ProfileRow, error) { return ReadPlacements(f) })
				eval := readRows(t, filepath.Join(dir, "scalability-"+typ+".csv"), func(f *os.File) ([]ProfileRow, error) { return ReadScalability(f) })
				for _, f := range forms {
					cells = append(cells, studyOne(t, model, typ, f, fit, eval))
				}
				if typ != "rtx" {
					continue
				}
				// rtx+3n: add the three-node rows with at most 12 GPUs to
				// the fit; evaluate the larger three-node shapes.
				fit3 := slices.Clone(fit)
				var eval3 []ProfileRow
				for _, r := range eval {
					switch {
					case r.Nodes == 3 && r.Replicas <= 12:
						fit3 = append(fit3, r)
					case r.Nodes == 3:
						eval3 = append(eval3, r)
					}
				}
				for _, f := range forms {
					cells = append(cells, studyOne(t, model, "rtx+3n", f, fit3, eval3))
				}
			}
		}
	} else {
		t.Log("GOODSCHED_SIA_TRACES unset: t4 (Pollux) only")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-12s %-8s %6s %6s  %-15s %-15s  %s\n", "model", "type", "rows", "unseen", "pollux med/p90", "allreduce med/p90", "better (median)")
	wins := map[Form]int{}
	var medians = map[Form][]float64{}
	for i := 0; i < len(cells); i += 2 {
		a, c := cells[i], cells[i+1]
		better := "tie"
		switch {
		case a.median < c.median*(1-1e-3):
			better = "pollux"
			wins[FormPollux]++
		case c.median < a.median*(1-1e-3):
			better = "allreduce"
			wins[FormAllReduce]++
		}
		medians[FormPollux] = append(medians[FormPollux], a.median)
		medians[FormAllReduce] = append(medians[FormAllReduce], c.median)
		fmt.Fprintf(&b, "%-12s %-8s %6d %6d  %5.1f%% / %5.1f%%  %5.1f%% / %5.1f%%  %s\n", a.model, a.typ, a.rows, a.unseen,
			100*a.median, 100*a.p90, 100*c.median, 100*c.p90, better)
	}
	fmt.Fprintf(&b, "wins: pollux %d, allreduce %d; median of medians: pollux %.1f%%, allreduce %.1f%%",
		wins[FormPollux], wins[FormAllReduce], 100*quantileOf(medians[FormPollux], 0.5), 100*quantileOf(medians[FormAllReduce], 0.5))
	t.Log(b.String())
	// The default is the form that generalises better: more wins on the
	// evaluated (model, type) cells, and no higher median of medians.
	other := FormPollux
	if DefaultForm == FormPollux {
		other = FormAllReduce
	}
	if wins[DefaultForm] < wins[other] || quantileOf(medians[DefaultForm], 0.5) > quantileOf(medians[other], 0.5) {
		t.Errorf("DefaultForm %v generalises worse than %v here (wins %d vs %d)", DefaultForm, other, wins[DefaultForm], wins[other])
	}
}
