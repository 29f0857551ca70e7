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
