package carbon

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"reflect"
	"testing"
)

// TestRead checks that Read picks, for every format in testdata, the
// reader a caller would have chosen, plain and gzip-compressed.
func TestRead(t *testing.T) {
	direct := ReadOptions{Basis: Direct}
	for _, tc := range []struct {
		file   string
		reader func(io.Reader, ReadOptions) (Series, error)
		opts   ReadOptions
	}{
		{"electricitymaps_ES_2022-01-01_7d.csv", ReadElectricityMaps, direct},
		{"electricitymaps_US-CAL-CISO_2022-01-01_14d.csv", ReadElectricityMaps, ReadOptions{Basis: LifeCycle}},
		{"carbonscaler_US-CAL-CISO_2020-01_hourly_sample.csv", ReadElectricityMapsLegacy, ReadOptions{}},
		{"letswaitawhile_DE_2019-12-20_3d.csv", ReadTwoColumn, ReadOptions{}},
		{"letswaitawhile_DE_2020-12-19_gap.csv", ReadTwoColumn, ReadOptions{}},
		{"watttime_SYNTHETIC_5min.csv", ReadWattTimeCSV, ReadOptions{}},
		{"watttime_v3_SYNTHETIC_5min.json", ReadWattTimeJSON, ReadOptions{}},
		{"carbon-aware-sdk_forecast_SYNTHETIC.json", ReadCarbonAwareSDK, ReadOptions{}},
	} {
		b, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := tc.reader(bytes.NewReader(b), tc.opts)
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(b)
		zw.Close()
		for _, in := range [][]byte{b, gz.Bytes()} {
			// The portal's basis is the caller's; the others keep theirs.
			opts := tc.opts
			if opts.Basis == BasisUnknown {
				opts.Basis = Direct
			}
			got, err := Read(bytes.NewReader(in), opts)
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("%s: Read error %v, the reader's %v", tc.file, err, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: Read gave %s %s %v… (%d values), the reader %s %s %v… (%d)", tc.file,
					got.Zone, got.Basis, got.Start, len(got.Values), want.Zone, want.Basis, want.Start, len(want.Values))
			}
		}
	}
	for _, bad := range []string{"", " \ufeff\n", "\x1f\x8bnot gzip"} {
		if _, err := Read(bytes.NewReader([]byte(bad)), ReadOptions{}); !errors.Is(err, ErrEmpty) && !errors.Is(err, ErrFormat) {
			t.Errorf("Read(%q): %v, want ErrEmpty or ErrFormat", bad, err)
		}
	}
}

func FuzzRead(f *testing.F) {
	for _, name := range []string{"watttime_SYNTHETIC_5min.csv", "watttime_v3_SYNTHETIC_5min.json", "letswaitawhile_DE_2019-12-20_3d.csv"} {
		f.Add(head(f, name, 20))
	}
	f.Add(head(f, "electricitymaps_ES_2022-01-01_7d.csv", 20))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Read(bytes.NewReader(b), ReadOptions{Basis: Direct})
		checkReadResult(t, s, err)
	})
}
