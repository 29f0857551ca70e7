package dispatch

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// model is a brute-force reference of the dispatcher's queueing discipline
// (no joins or failures): per worker two FIFO slices, least-loaded placement
// by a linear scan, round robin by a counter, purge by search.
type model struct {
	q       [][2][]int // task payloads per worker and class
	serving []int      // payload in service, -1 none
	cancel  []bool
	rr      int
}

func newModel(n int) *model {
	m := &model{q: make([][2][]int, n), serving: make([]int, n), cancel: make([]bool, n)}
	for i := range m.serving {
		m.serving[i] = -1
	}
	return m
}

func (m *model) key(w int) [3]int {
	h := len(m.q[w][high])
	if m.serving[w] >= 0 {
		h++
	}
	return [3]int{h, len(m.q[w][low]), w}
}

func (m *model) leastLoaded(exclude int) int {
	best := -1
	for w := range m.q {
		if w == exclude {
			continue
		}
		kw, kb := m.key(w), [3]int{}
		if best >= 0 {
			kb = m.key(best)
		}
		if best < 0 || slices.Compare(kw[:], kb[:]) < 0 {
			best = w
		}
	}
	return best
}

// TestAgainstModel compares placement, service order and purging with the
// brute-force model over random call sequences, for least-loaded and
// round-robin placement under DAS, naive and no duplication.
func TestAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	now := time.Unix(0, 0)
	for trial := range 160 {
		n := 2 + r.IntN(5)
		pol := []Policy{PolicyDAS, PolicyNaive, PolicyNone}[trial%3]
		ch := []Choice{ChoiceLeastLoaded, ChoiceRoundRobin}[trial/3%2]
		tied := trial/6%2 == 1
		d := must(New[int](Config{Workers: n, Policy: pol, Choice: ch, PurgeOnStart: tied}))
		m := newModel(n)
		ids := map[int]TaskID{}
		next := 0
		for step := 0; step < 400; step++ {
			switch op := r.IntN(3); {
			case op == 0:
				// Submit: compare placement.
				var wp, wd int
				if ch == ChoiceLeastLoaded {
					wp = m.leastLoaded(-1)
				} else {
					wp = m.rr % n
					m.rr++
				}
				dupClass := uint8(low)
				if pol == PolicyNaive {
					dupClass = high
				}
				pl := must(d.Submit(next, now))
				if int(pl.Primary) != wp {
					t.Fatalf("trial %d step %d: primary on %d, model %d", trial, step, pl.Primary, wp)
				}
				m.q[wp][high] = append(m.q[wp][high], next)
				wd = -1
				if pol != PolicyNone {
					if ch == ChoiceLeastLoaded {
						wd = m.leastLoaded(wp)
					} else {
						wd = (wp + 1) % n
					}
					m.q[wd][dupClass] = append(m.q[wd][dupClass], next)
				}
				if int(pl.Duplicate) != wd {
					t.Fatalf("trial %d step %d: duplicate on %d, model %d", trial, step, pl.Duplicate, wd)
				}
				ids[next] = pl.ID
				next++
			case op == 1:
				// Next on a random worker.
				w := r.IntN(n)
				if m.serving[w] >= 0 && !m.cancel[w] {
					if _, _, err := d.Next(WorkerID(w)); err == nil {
						t.Fatal("Next while busy accepted")
					}
					continue
				}
				m.serving[w], m.cancel[w] = -1, false
				want := -1
				for _, c := range []uint8{high, low} {
					if len(m.q[w][c]) > 0 {
						want = m.q[w][c][0]
						m.q[w][c] = m.q[w][c][1:]
						break
					}
				}
				tk, ok, err := d.Next(WorkerID(w))
				if err != nil {
					t.Fatal(err)
				}
				if (want >= 0) != ok || (ok && tk.Payload != want) {
					t.Fatalf("trial %d step %d: worker %d got %v/%d, model %d", trial, step, w, ok, tk.Payload, want)
				}
				m.serving[w] = want
				if tied && want >= 0 {
					for x := range m.q {
						for c := range 2 {
							if i := slices.Index(m.q[x][c], want); i >= 0 {
								m.q[x][c] = slices.Delete(m.q[x][c], i, i+1)
							}
						}
					}
				}
			default:
				// Complete on a random serving worker.
				w := r.IntN(n)
				p := m.serving[w]
				if p < 0 {
					continue
				}
				out := must(d.Complete(ids[p], WorkerID(w), now))
				wasCancelled := m.cancel[w]
				m.serving[w], m.cancel[w] = -1, false
				if out.Won == wasCancelled {
					t.Fatalf("trial %d step %d: won %v, model cancelled %v", trial, step, out.Won, wasCancelled)
				}
				if !out.Won {
					continue
				}
				purged, cancel := -1, -1
				for x := range m.q {
					for c := range 2 {
						if i := slices.Index(m.q[x][c], p); i >= 0 {
							m.q[x][c] = slices.Delete(m.q[x][c], i, i+1)
							purged = x
						}
					}
					if x != w && m.serving[x] == p && !m.cancel[x] {
						m.cancel[x] = true
						cancel = x
					}
				}
				if int(out.Purged) != purged || int(out.Cancel) != cancel {
					t.Fatalf("trial %d step %d: outcome %+v, model purged %d cancel %d", trial, step, out, purged, cancel)
				}
			}
		}
		if err := d.check(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStarvedDuplicatesLeavePrimariesAlone: while duplicates are starved
// (workers serve only when a primary waits), DAS serves primaries in
// exactly the order and on exactly the workers of no duplication.
func TestStarvedDuplicatesLeavePrimariesAlone(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	now := time.Unix(0, 0)
	for trial := range 50 {
		n := 2 + r.IntN(4)
		das := must(New[int](Config{Workers: n, Policy: PolicyDAS, Choice: ChoiceRoundRobin}))
		none := must(New[int](Config{Workers: n, Policy: PolicyNone, Choice: ChoiceRoundRobin}))
		served := [2][]int{}
		next := 0
		for range 300 {
			if r.IntN(2) == 0 {
				must(das.Submit(next, now))
				must(none.Submit(next, now))
				next++
				continue
			}
			w := WorkerID(r.IntN(n))
			for i, d := range []*Dispatcher[int]{das, none} {
				if l := must(d.WorkerLoad(w)); l.High == 0 {
					continue
				}
				tk, ok, err := d.Next(w)
				if err != nil || !ok || tk.Duplicate {
					t.Fatalf("trial %d: %v %v %+v", trial, ok, err, tk)
				}
				served[i] = append(served[i], int(w)<<20|tk.Payload)
				must(d.Complete(tk.ID, w, now))
			}
		}
		if !slices.Equal(served[0], served[1]) {
			t.Fatalf("trial %d: DAS served primaries %v, no duplication %v", trial, served[0], served[1])
		}
	}
}
