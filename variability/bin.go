package variability

import (
	"math"
	"slices"
)

// Bin returns t with each class's factors binned as PAL's placer bins
// them: the devices' factors are clustered by k-means into k bins, where
// k is 2 plus the number of outliers (factors above mean + 3 standard
// deviations); each device gets its bin's centroid divided by the median
// of the centroids. (PAL's artifact means to choose the base k by
// silhouette score over 2..10, but its loop returns after the first
// candidate, so it computes k = 2 + outliers; that is what Bin does.)
//
// The clustering is the exact 1-D k-means optimum (dynamic programming
// over the sorted factors), so the result is deterministic; k is capped
// at the number of distinct factors.
func Bin(t *Table) *Table {
	out := NewTable(t.classes...)
	devs := t.Devices()
	for _, class := range t.classes {
		vals := make([]float64, len(devs))
		for i, d := range devs {
			vals[i] = t.Factor(d, class)
		}
		sf := binFactors(vals)
		for i, d := range devs {
			_ = out.Set(d, class, sf[i]) // centroids of positive values are positive
		}
	}
	return out
}

// binFactors returns each value's normalised centroid (see Bin).
func binFactors(vals []float64) []float64 {
	n := len(vals)
	if n == 0 {
		return nil
	}
	mean, sd := meanStd(vals)
	k := 2
	for _, v := range vals {
		if v > mean+3*sd {
			k++
		}
	}
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	distinct := 1
	for i := 1; i < n; i++ {
		if sorted[i] != sorted[i-1] {
			distinct++
		}
	}
	k = min(k, distinct)
	bounds := kmeans1D(sorted, k) // bounds[i] = first index of cluster i
	centers := make([]float64, k)
	for i := range k {
		end := n
		if i+1 < k {
			end = bounds[i+1]
		}
		s := 0.0
		for _, v := range sorted[bounds[i]:end] {
			s += v
		}
		centers[i] = s / float64(end-bounds[i])
	}
	med := median(slices.Clone(centers))
	out := make([]float64, n)
	for i, v := range vals {
		best := 0
		for c := 1; c < k; c++ { // nearest centroid (ties: the lower)
			if math.Abs(v-centers[c]) < math.Abs(v-centers[best]) {
				best = c
			}
		}
		out[i] = centers[best] / med
	}
	return out
}

// meanStd returns the mean and the sample standard deviation (n − 1, as
// pandas) of vs.
func meanStd(vs []float64) (float64, float64) {
	m := 0.0
	for _, v := range vs {
		m += v
	}
	m /= float64(len(vs))
	if len(vs) < 2 {
		return m, 0
	}
	ss := 0.0
	for _, v := range vs {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / float64(len(vs)-1))
}

// kmeans1D partitions sorted values into k contiguous clusters of least
// total squared error and returns each cluster's first index.
func kmeans1D(s []float64, k int) []int {
	n := len(s)
	pre, pre2 := make([]float64, n+1), make([]float64, n+1)
	for i, v := range s {
		pre[i+1], pre2[i+1] = pre[i]+v, pre2[i]+v*v
	}
	cost := func(i, j int) float64 { // cluster s[i:j]
		sum, cnt := pre[j]-pre[i], float64(j-i)
		return pre2[j] - pre2[i] - sum*sum/cnt
	}
	// d[c][j]: best cost of s[:j] in c+1 clusters; from[c][j]: start of the last.
	d := make([][]float64, k)
	from := make([][]int, k)
	for c := range k {
		d[c] = make([]float64, n+1)
		from[c] = make([]int, n+1)
		for j := 1; j <= n; j++ {
			if c == 0 {
				d[c][j] = cost(0, j)
				continue
			}
			d[c][j] = math.Inf(1)
			for i := c; i < j; i++ {
				if v := d[c-1][i] + cost(i, j); v < d[c][j] {
					d[c][j], from[c][j] = v, i
				}
			}
		}
	}
	bounds := make([]int, k)
	j := n
	for c := k - 1; c > 0; c-- {
		bounds[c] = from[c][j]
		j = bounds[c]
	}
	return bounds
}
