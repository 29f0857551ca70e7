package unrelated

import (
	"math/rand"
	"testing"
)

func BenchmarkOptimal8x4(b *testing.B) {
	ins := make([]Instance, 64)
	for k := range ins {
		ins[k] = Random(rand.New(rand.NewSource(int64(k+1))), 8, 4)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := Optimal(ins[i%len(ins)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLearned100x10(b *testing.B) {
	net, err := Shipped()
	if err != nil {
		b.Fatal(err)
	}
	in := Random(rand.New(rand.NewSource(1)), 100, 10)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := Run(in, Learned{Network: net}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRule100x10(b *testing.B) {
	in := Random(rand.New(rand.NewSource(1)), 100, 10)
	for i := 0; i < b.N; i++ {
		if _, _, err := Run(in, Rule{}); err != nil {
			b.Fatal(err)
		}
	}
}
