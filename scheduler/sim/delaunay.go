package sim

import "slices"

// triangulation is a Delaunay triangulation of integer points in the plane,
// used to interpolate measurements between (nodes, replicas) shapes. It is
// built once and read-only afterwards.
type triangulation struct {
	pts  [][2]int64
	tris [][3]int
}

// newTriangulation triangulates pts with the Bowyer–Watson algorithm using
// exact integer predicates. Fewer than three non-collinear points give no
// triangles; locate then falls back to the nearest point.
func newTriangulation(pts [][2]int64) *triangulation {
	t := &triangulation{pts: slices.Clone(pts)}
	n := len(pts)
	if n < 3 {
		return t
	}
	// The enclosing triangle must be large against the data, yet small
	// enough that the in-circle determinant (degree 4 in the coordinates)
	// fits an int64: shapes are at most a few hundred nodes or replicas.
	var extent int64 = 4
	for _, p := range pts {
		extent = max(extent, abs64(p[0]), abs64(p[1]))
	}
	big := min(32*extent, 12000)
	all := append(slices.Clone(pts), [2]int64{-big, -big}, [2]int64{3 * big, -big}, [2]int64{-big, 3 * big})
	tris := [][3]int{{n, n + 1, n + 2}}
	for i := 0; i < n; i++ {
		p := all[i]
		var keep [][3]int
		type edge struct{ a, b int }
		count := make(map[edge]int)
		var order []edge
		for _, tr := range tris {
			if inCircle(all[tr[0]], all[tr[1]], all[tr[2]], p) {
				for k := 0; k < 3; k++ {
					a, b := tr[k], tr[(k+1)%3]
					e := edge{min(a, b), max(a, b)}
					if count[e] == 0 {
						order = append(order, e)
					}
					count[e]++
				}
				continue
			}
			keep = append(keep, tr)
		}
		for _, e := range order {
			if count[e] == 1 && orient(all[e.a], all[e.b], p) != 0 {
				keep = append(keep, ccw(all, [3]int{e.a, e.b, i}))
			}
		}
		tris = keep
	}
	for _, tr := range tris {
		if tr[0] < n && tr[1] < n && tr[2] < n {
			t.tris = append(t.tris, tr)
		}
	}
	return t
}

// ccw returns the triangle with its vertices in counter-clockwise order.
func ccw(all [][2]int64, tr [3]int) [3]int {
	if orient(all[tr[0]], all[tr[1]], all[tr[2]]) < 0 {
		tr[1], tr[2] = tr[2], tr[1]
	}
	return tr
}

// orient is twice the signed area of abc: > 0 when counter-clockwise.
func orient(a, b, c [2]int64) int64 {
	return (b[0]-a[0])*(c[1]-a[1]) - (b[1]-a[1])*(c[0]-a[0])
}

// inCircle reports whether d is strictly inside the circumcircle of the
// triangle abc (in either orientation).
func inCircle(a, b, c, d [2]int64) bool {
	ax, ay := a[0]-d[0], a[1]-d[1]
	bx, by := b[0]-d[0], b[1]-d[1]
	cx, cy := c[0]-d[0], c[1]-d[1]
	det := (ax*ax+ay*ay)*(bx*cy-cx*by) - (bx*bx+by*by)*(ax*cy-cx*ay) + (cx*cx+cy*cy)*(ax*by-bx*ay)
	if orient(a, b, c) < 0 {
		det = -det
	}
	return det > 0
}

// weights returns the indices of up to three points and their non-negative
// weights (summing to 1) that interpolate linearly at (x, y). Inside the
// hull these are barycentric coordinates; outside, the triangle whose
// coordinates are least negative is used with negative weights clamped, a
// bounded extrapolation.
func (t *triangulation) weights(x, y float64) ([3]int, [3]float64, int) {
	var idx [3]int
	var w [3]float64
	if len(t.tris) == 0 {
		best, bd := 0, -1.0
		for i, p := range t.pts {
			d := (float64(p[0])-x)*(float64(p[0])-x) + (float64(p[1])-y)*(float64(p[1])-y)
			if bd < 0 || d < bd {
				best, bd = i, d
			}
		}
		idx[0], w[0] = best, 1
		return idx, w, 1
	}
	bestScore := -1e300
	for _, tr := range t.tris {
		a, b, c := t.pts[tr[0]], t.pts[tr[1]], t.pts[tr[2]]
		ax, ay := float64(a[0]), float64(a[1])
		bx, by := float64(b[0]), float64(b[1])
		cx, cy := float64(c[0]), float64(c[1])
		den := (by-cy)*(ax-cx) + (cx-bx)*(ay-cy)
		l1 := ((by-cy)*(x-cx) + (cx-bx)*(y-cy)) / den
		l2 := ((cy-ay)*(x-cx) + (ax-cx)*(y-cy)) / den
		l3 := 1 - l1 - l2
		score := min(l1, l2, l3)
		if score > bestScore+1e-12 {
			bestScore = score
			idx = tr
			w = [3]float64{l1, l2, l3}
		}
	}
	if bestScore < 0 {
		s := 0.0
		for k := range w {
			w[k] = max(w[k], 0)
			s += w[k]
		}
		for k := range w {
			w[k] /= s
		}
	}
	return idx, w, 3
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
