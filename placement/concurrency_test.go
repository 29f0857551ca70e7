package placement

import (
	"fmt"
	"sync"
	"testing"
)

// TestCloneConcurrent writes to several clones from their own goroutines
// while others read the original: run with -race.
func TestCloneConcurrent(t *testing.T) {
	c := testCluster(uniform("n", 16, 8, "a100", fullMesh(12))...)
	s := mustState(t, c, Assignment{Job: "base", Devices: []string{"n-000/0", "n-001/0"}})
	clones := make([]*State, 4)
	for i := range clones {
		clones[i] = s.Clone() // Clone is a write on s: done before the goroutines.
	}
	var wg sync.WaitGroup
	var p Chooser
	for i, k := range clones {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 20 {
				a, err := p.Place(k, Request{Job: fmt.Sprintf("c%d-%d", i, j), Count: 1 + (i+j)%8})
				if err != nil {
					continue
				}
				if err := k.Assign(a); err != nil {
					t.Error(err)
					return
				}
			}
			k.Release("base")
		}()
		go func() {
			defer wg.Done()
			for range 20 {
				_, _ = p.Place(s, Request{Job: "reader", Count: 8})
				_ = s.Fragmentation()
				_, _ = s.Assignment("base")
			}
		}()
	}
	wg.Wait()
	if a, ok := s.Assignment("base"); !ok || len(a.Devices) != 2 || s.Free("a100") != 126 {
		t.Fatalf("original changed: %v free %d", a, s.Free("a100"))
	}
	for _, k := range clones {
		checkInvariants(t, c, k)
	}
}

// TestTrieDeep exercises a three-level usage trie (more than 4,096 nodes)
// and copy-on-write across levels.
func TestTrieDeep(t *testing.T) {
	c := testCluster(uniform("n", 5000, 1, "t4", nil)...)
	s := mustState(t, c)
	if s.nodes.shift != 2*trieBits {
		t.Fatalf("shift %d, want %d", s.nodes.shift, 2*trieBits)
	}
	k := s.Clone()
	ids := []string{"n-000/0", "n-4095/0", "n-4096/0", "n-4999/0"}
	if err := k.Assign(Assignment{Job: "j", Devices: ids}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, held := s.Owner(id); held {
			t.Fatalf("original sees %s held", id)
		}
		if o, _ := k.Owner(id); o != "j" {
			t.Fatalf("clone lost %s", id)
		}
	}
	if s.Free("t4") != 5000 || k.Free("t4") != 4996 {
		t.Fatalf("free %d / %d", s.Free("t4"), k.Free("t4"))
	}
}
