package host

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// indices returns "0,1,2,…" of at least n bytes, and its count.
func indices(n int) (string, int) {
	var b strings.Builder
	i := 0
	for ; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	return b.String(), i
}

// BenchmarkParseDevices250KiB parses (or refuses) the values of issue 41,
// item 3: a 250 KiB goodsched.io/devices annotation on a bound pod of ours
// (refused by the cap, then also by the MAC), and the longest value a
// real node needs (1,024 GPUs, 4,010 bytes), parsed in linear time.
func BenchmarkParseDevices250KiB(b *testing.B) {
	huge, n := indices(250 << 10)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Annotations: map[string]string{AnnotationDevices: huge}}, Spec: corev1.PodSpec{NodeName: "n"}}
	p.Annotations[AnnotationBinding] = bindingMAC(testKey, p.UID, "n", huge)
	b.Run("refused-250KiB", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := boundDevices(p, n, testKey); !errors.Is(err, ErrAnnotationTooLong) {
				b.Fatal(err)
			}
		}
	})
	b.Run("uncapped-parse-250KiB", func(b *testing.B) {
		// What the cap spares: the linear parser on the whole value.
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseDevicesUncapped(huge, n); err != nil {
				b.Fatal(err)
			}
		}
	})
	full, m := indices(4000)
	q := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Annotations: map[string]string{AnnotationDevices: full}}, Spec: corev1.PodSpec{NodeName: "n"}}
	q.Annotations[AnnotationBinding] = bindingMAC(testKey, q.UID, "n", full)
	b.Run("verified-1024-GPUs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d, _, err := boundDevices(q, m, testKey); err != nil || len(d) != m {
				b.Fatal(err)
			}
		}
	})
}

// TestParseDevicesIsLinear: the parser takes the whole 250 KiB value when
// uncapped (for the benchmark) and returns every index.
func TestParseDevicesIsLinear(t *testing.T) {
	huge, n := indices(250 << 10)
	d, err := parseDevicesUncapped(huge, n)
	if err != nil || len(d) != n {
		t.Fatalf("%d indices, %v; want %d", len(d), err, n)
	}
}

// naiveDevices is the obvious parser, the oracle of FuzzParseDevices.
func naiveDevices(v string, gpus int) ([]int, bool) {
	if strings.TrimSpace(v) == "" {
		return nil, false
	}
	seen := map[int]bool{}
	for _, f := range strings.Split(v, ",") {
		f = strings.Trim(f, " \t")
		if f == "" || strings.ContainsAny(f, " \t+-") {
			return nil, false
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n >= gpus || seen[n] {
			return nil, false
		}
		seen[n] = true
	}
	var out []int
	for i := range gpus {
		if seen[i] {
			out = append(out, i)
		}
	}
	return out, true
}

// FuzzParseDevices checks the linear parser against the obvious one.
func FuzzParseDevices(f *testing.F) {
	for _, s := range []string{"0", "0,1", " 3, 1,0", "1,1", "", ",", "0,,1", "7 ,6", "0 1", "08", "+1", "99999999999999999999"} {
		f.Add(s, 8)
	}
	f.Fuzz(func(t *testing.T, v string, gpus int) {
		gpus = min(max(gpus, 0), 4096)
		got, err := parseDevicesUncapped(v, gpus)
		want, ok := naiveDevices(v, gpus)
		if (err == nil) != ok || (ok && !slices.Equal(got, want)) {
			t.Fatalf("parseDevices(%q, %d) = %v, %v; the naive parser says %v, %v", v, gpus, got, err, want, ok)
		}
	})
}
