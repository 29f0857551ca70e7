package carbon

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
)

// Read reads intensity in any format this package reads, picking the
// reader from the data's first bytes. Gzip data is decompressed first.
// Then "{" starts a WattTime v3 JSON response (ReadWattTimeJSON) and "["
// a Carbon Aware SDK array (ReadCarbonAwareSDK); a CSV whose header names
// "Datetime" and "Carbon Intensity" is an Electricity Maps portal export
// (ReadElectricityMaps: opts.Basis selects the column and is required),
// one with "carbon_intensity_avg" the legacy export, one with
// "point_time" a WattTime CSV, and anything else a two-column CSV (time,
// value; a "Time,Carbon Intensity" file such as Let's Wait Awhile's is
// one). opts.Basis is used by the portal format only: the others carry
// the basis they state, or BasisUnknown. Errors are the chosen reader's.
func Read(r io.Reader, opts ReadOptions) (Series, error) {
	b, err := readAllLimited(r)
	if err != nil {
		return Series{}, err
	}
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return Series{}, fmt.Errorf("%w: gzip: %v", ErrFormat, err)
		}
		if b, err = readAllLimited(zr); err != nil {
			return Series{}, err
		}
	}
	trim := bytes.TrimLeft(b, " \t\r\n\ufeff")
	if len(trim) == 0 {
		return Series{}, fmt.Errorf("%w: empty document", ErrEmpty)
	}
	line, _, _ := bytes.Cut(trim, []byte("\n"))
	head := strings.ToLower(string(line))
	basis := opts.Basis
	opts.Basis = BasisUnknown
	switch {
	case trim[0] == '{':
		return ReadWattTimeJSON(bytes.NewReader(b), opts)
	case trim[0] == '[':
		return ReadCarbonAwareSDK(bytes.NewReader(b), opts)
	case strings.Contains(head, "carbon intensity") && strings.Contains(head, "datetime"):
		opts.Basis = basis
		return ReadElectricityMaps(bytes.NewReader(b), opts)
	case strings.Contains(head, "carbon_intensity_avg"):
		return ReadElectricityMapsLegacy(bytes.NewReader(b), opts)
	case strings.Contains(head, "point_time"):
		return ReadWattTimeCSV(bytes.NewReader(b), opts)
	}
	return ReadTwoColumn(bytes.NewReader(b), opts)
}
