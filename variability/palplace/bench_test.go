package palplace_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/variability"
	"github.com/goodsched/goodsched/variability/palplace"
)

// BenchmarkPlace compares, per gang placed, today's placers without speed
// data (placement.RoundPlacer, the default, and Packer) with the default
// placer and PAL's placers on speed data (PAL's binned Longhorn profile through an
// Estimator's snapshot): 96 gangs of 1–8 V100s, 1–4 per node mostly,
// filling 75% of a 64×4 cluster, all new (every gang is placed).
func BenchmarkPlace(b *testing.B) {
	x, c := index(b, "64x4:v100-32gb")
	m, err := variability.Load(os.DirFS("../testdata"), "longhorn")
	if err != nil {
		b.Fatal(err)
	}
	truth, err := m.Assign(c)
	if err != nil {
		b.Fatal(err)
	}
	est, err := variability.NewEstimator(c, variability.Bin(truth), variability.Options{LocalityPenalty: 1.7})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	classOf := map[string]string{}
	var targets []placement.Target
	total := 0
	for i := 0; total < 192; i++ {
		n := []int{1, 1, 2, 2, 4, 4, 3, 8}[rng.IntN(8)]
		job := fmt.Sprintf("j%03d", i)
		classOf[job] = []string{"classA", "classB", "classC", "classD"}[rng.IntN(4)]
		targets = append(targets, placement.Target{Job: job, Type: "v100-32gb", Count: n})
		total += n
	}
	speeds := est.Speeds(classOf)
	for _, bc := range []struct {
		name   string
		p      placement.Placer
		speeds placement.Speeds
	}{
		{"today/RoundPlacer", placement.RoundPlacer{}, nil},
		{"today/Packer", placement.Packer{}, nil},
		{"speeds/RoundPlacer", placement.RoundPlacer{}, speeds},
		{"speeds/PackedSticky", palplace.PackedSticky{}, speeds},
		{"speeds/PMFirst", palplace.PMFirst{}, speeds},
		{"speeds/PAL", palplace.PAL{}, speeds},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				in := placement.PlaceInput{Cluster: x, Targets: targets, Speeds: bc.speeds}
				if _, ok := bc.p.(placement.StateUser); !ok {
					st, err := x.NewState(nil)
					if err != nil {
						b.Fatal(err)
					}
					in.State = st
				}
				res, err := bc.p.Place(ctx, in)
				if err != nil || len(res.Unplaced) > 0 {
					b.Fatalf("%v, unplaced %v", err, res.Unplaced)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(targets)), "ns/gang")
		})
	}
	_ = placement.Assignment{}
}
