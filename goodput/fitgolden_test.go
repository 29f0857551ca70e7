package goodput

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fitGolden is the loss (FitResult.Loss) of each of 36 fits, recorded
// with the fit of issue 16 (commit f691a45) as the bar a faster fit must
// clear (issue 42): each model's placements profile (aggregated per
// configuration, every k-th kept so about 50 remain), on Pollux's T4
// cluster (testdata) and Sia's DGX A100 (dgx-ext) and RTX 2080 Ti (rtx)
// clusters, with both forms, at FitOptions' defaults otherwise. No change
// to the fit may end worse on any of them.
var fitGolden = map[string]float64{
	"bert/t4/pollux":                0.18722155425637826,  // 43 obs, 33 evaluations, converged
	"bert/t4/allreduce":             0.0602820348667596,   // 43 obs, 35 evaluations, converged
	"cifar10/t4/pollux":             0.13413587651085715,  // 47 obs, 46 evaluations, converged
	"cifar10/t4/allreduce":          0.11492155657130246,  // 47 obs, 57 evaluations, converged
	"deepspeech2/t4/pollux":         0.24073302486565415,  // 48 obs, 35 evaluations, converged
	"deepspeech2/t4/allreduce":      0.22119774029702252,  // 48 obs, 38 evaluations, converged
	"imagenet/t4/pollux":            0.13750693837766897,  // 46 obs, 42 evaluations, converged
	"imagenet/t4/allreduce":         0.10779098119438994,  // 46 obs, 57 evaluations, converged
	"ncf/t4/pollux":                 0.21911564713483303,  // 50 obs, 58 evaluations, converged
	"ncf/t4/allreduce":              0.1339885735183603,   // 50 obs, 36 evaluations, converged
	"yolov3/t4/pollux":              0.35540740181546754,  // 43 obs, 34 evaluations, converged
	"yolov3/t4/allreduce":           0.26069768308061808,  // 43 obs, 44 evaluations, converged
	"bert/dgx-ext/pollux":           0.086215411260360211, // 42 obs, 29 evaluations, converged
	"bert/dgx-ext/allreduce":        0.086215411260360211, // 42 obs, 29 evaluations, converged
	"bert/rtx/pollux":               0.098031451987113008, // 39 obs, 24 evaluations, converged
	"bert/rtx/allreduce":            0.098031451987113008, // 39 obs, 24 evaluations, converged
	"cifar10/dgx-ext/pollux":        0.11477775820690009,  // 44 obs, 31 evaluations, converged
	"cifar10/dgx-ext/allreduce":     0.11477775820690003,  // 44 obs, 31 evaluations, converged
	"cifar10/rtx/pollux":            0.11051394733232706,  // 47 obs, 25 evaluations, converged
	"cifar10/rtx/allreduce":         0.11051394733232706,  // 47 obs, 25 evaluations, converged
	"deepspeech2/dgx-ext/pollux":    0.19305887681405723,  // 43 obs, 62 evaluations, converged
	"deepspeech2/dgx-ext/allreduce": 0.19305887681405723,  // 43 obs, 62 evaluations, converged
	"deepspeech2/rtx/pollux":        0.27656536475213539,  // 50 obs, 36 evaluations, converged
	"deepspeech2/rtx/allreduce":     0.27656536475213539,  // 50 obs, 36 evaluations, converged
	"imagenet/dgx-ext/pollux":       0.11131376232187644,  // 46 obs, 37 evaluations, converged
	"imagenet/dgx-ext/allreduce":    0.11131376232187642,  // 46 obs, 37 evaluations, converged
	"imagenet/rtx/pollux":           0.11286434542962363,  // 46 obs, 22 evaluations, converged
	"imagenet/rtx/allreduce":        0.11286434542962363,  // 46 obs, 22 evaluations, converged
	"ncf/dgx-ext/pollux":            0.19488714770667934,  // 49 obs, 22 evaluations, converged
	"ncf/dgx-ext/allreduce":         0.19488714770667934,  // 49 obs, 22 evaluations, converged
	"ncf/rtx/pollux":                0.17139054975937831,  // 49 obs, 21 evaluations, converged
	"ncf/rtx/allreduce":             0.17139054975937831,  // 49 obs, 21 evaluations, converged
	"yolov3/dgx-ext/pollux":         0.64097043970955592,  // 41 obs, 75 evaluations, converged
	"yolov3/dgx-ext/allreduce":      0.64097043970955592,  // 41 obs, 75 evaluations, converged
	"yolov3/rtx/pollux":             0.29682773132892148,  // 35 obs, 26 evaluations, converged
	"yolov3/rtx/allreduce":          0.29682773132892148,  // 35 obs, 26 evaluations, converged
}

// fitGoldenCase is one of the 36 fits.
type fitGoldenCase struct {
	model, typ string
	form       Form
	obs        []Observation
}

func (c fitGoldenCase) key() string { return c.model + "/" + c.typ + "/" + c.form.String() }

// about50 keeps every k-th observation so that about 50 remain.
func about50(obs []Observation) []Observation {
	return every(obs, max(1, (len(obs)+49)/50))
}

// fitGoldenCases returns the Pollux (T4) cases, and Sia's when
// GOODSCHED_SIA_TRACES points at sia-simulator/traces (Sia's profiles
// have no licence, so they are not in testdata).
func fitGoldenCases(t *testing.T) []fitGoldenCase {
	var out []fitGoldenCase
	for _, model := range models {
		obs := about50(aggregate(readProfile(t, model, "placements.csv")))
		for _, f := range []Form{FormPollux, FormAllReduce} {
			out = append(out, fitGoldenCase{model, "t4", f, obs})
		}
	}
	sia := os.Getenv("GOODSCHED_SIA_TRACES")
	if sia == "" {
		return out
	}
	for _, model := range models {
		for _, typ := range []string{"dgx-ext", "rtx"} {
			rows := readRows(t, filepath.Join(sia, model, "placements-"+typ+".csv"), func(f *os.File) ([]ProfileRow, error) { return ReadPlacements(f) })
			obs := about50(aggregate(rows))
			for _, f := range []Form{FormPollux, FormAllReduce} {
				out = append(out, fitGoldenCase{model, typ, f, obs})
			}
		}
	}
	return out
}

// TestFitNoWorseThanGolden: on the 36 fits of fitGolden (12 without
// GOODSCHED_SIA_TRACES), every loss is at most the recorded one + 1e-9.
func TestFitNoWorseThanGolden(t *testing.T) {
	cases := fitGoldenCases(t)
	if len(cases) < 36 {
		t.Logf("GOODSCHED_SIA_TRACES unset: %d of the 36 fits (Pollux's T4 profiles)", len(cases))
	}
	var b strings.Builder
	for _, c := range cases {
		_, r, err := Fit(c.obs, FitOptions{Form: c.form})
		if err != nil {
			t.Fatalf("%s: %v", c.key(), err)
		}
		fmt.Fprintf(&b, "\t%q: %.17g, // %d obs, %d evaluations, %v\n", c.key(), r.Loss, len(c.obs), r.Evaluations, r.Status)
		want, ok := fitGolden[c.key()]
		if !ok {
			t.Errorf("%s: no golden loss", c.key())
			continue
		}
		if r.Loss > want+1e-9 {
			t.Errorf("%s: loss %.12g, above the golden %.12g", c.key(), r.Loss, want)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("losses:\n%s", b.String())
	}
}
