package pollux

// ordered is an element of a heapOf: a.before(b) when a comes out first.
type ordered[T any] interface{ before(T) bool }

// heapOf is a binary heap of T by before, laid out and reordered exactly
// as container/heap does (so the order of ties is the same), without
// boxing every element into an interface on its way in and out.
type heapOf[T ordered[T]] []T

// init establishes the heap order over all elements.
func (h heapOf[T]) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i, len(h))
	}
}

// push adds x.
func (h *heapOf[T]) push(x T) {
	*h = append(*h, x)
	h.up(len(*h) - 1)
}

// pop removes and returns the first element (h must not be empty).
func (h *heapOf[T]) pop() T {
	old := *h
	n := len(old) - 1
	old[0], old[n] = old[n], old[0]
	old.down(0, n)
	x := old[n]
	*h = old[:n]
	return x
}

func (h heapOf[T]) up(j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !h[j].before(h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (h heapOf[T]) down(i, n int) {
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 { // j1 < 0 after int overflow
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && h[j2].before(h[j1]) {
			j = j2 // right child
		}
		if !h[j].before(h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// heapWalk visits the elements of a shrinkHeap in pop order without
// removing them: the frontier of the heap's tree (the children of what it
// has visited) is kept in a small heap of positions. Visiting k elements
// costs O(k log k) and leaves the heap as it was. It is written for
// shrinks, not for any ordered type: a transfer trial walks many donors,
// and a generic walk calls before through its dictionary, uninlined, on
// every comparison.
type heapWalk struct {
	h     shrinkHeap
	front []int // positions in h, heap-ordered by h's elements
}

// reset starts a walk of h.
func (w *heapWalk) reset(h shrinkHeap) {
	w.h, w.front = h, w.front[:0]
	if len(h) > 0 {
		w.front = append(w.front, 0)
	}
}

// next returns the position in h of the next element in pop order, and
// false when every element was visited.
func (w *heapWalk) next() (int, bool) {
	f := w.front
	if len(f) == 0 {
		return 0, false
	}
	at := f[0]
	n := len(f) - 1
	f[0] = f[n]
	f = f[:n]
	w.siftDown(f)
	for _, c := range [2]int{2*at + 1, 2*at + 2} {
		if c < len(w.h) {
			f = append(f, c)
			w.siftUp(f)
		}
	}
	w.front = f
	return at, true
}

func (w *heapWalk) siftUp(f []int) {
	j := len(f) - 1
	for j > 0 {
		i := (j - 1) / 2
		if !w.h[f[j]].before(w.h[f[i]]) {
			break
		}
		f[i], f[j] = f[j], f[i]
		j = i
	}
}

func (w *heapWalk) siftDown(f []int) {
	i := 0
	for {
		j := 2*i + 1
		if j >= len(f) {
			break
		}
		if j2 := j + 1; j2 < len(f) && w.h[f[j2]].before(w.h[f[j]]) {
			j = j2
		}
		if !w.h[f[j]].before(w.h[f[i]]) {
			break
		}
		f[i], f[j] = f[j], f[i]
		i = j
	}
}
