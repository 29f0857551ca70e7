// Package carbondata embeds a year of real carbon intensity, so that
// examples and a user's first runs have grid data in a fresh clone:
// Electricity Maps' hourly series for 2022 of California (CAISO), Spain
// and Norway, gzip-compressed (gzip -9 -n) and otherwise byte-identical to
// the Data Portal exports published in
// umassos/decarbonization-potential:downloaded_carbon_data/ at commit
// 3493a63016bd2aaa71cae1f33809576786b331d4 (sha256 of the uncompressed
// files: California 82dd6d2d743cfc39b55c35ffbd63ac9c6b55a7367bb8fb2bdba3d071ce4ba33f,
// Spain 06752426534b84a317a14083774f52e58afe132612064b181f4d5f05fa8120b8,
// Norway 2c22f87f891f721602915e04426e8385ba2245785151a08bd14481450bfd40b3).
//
// Licence: the data are © Electricity Maps, made available under the Open
// Database License (ODbL) 1.0: "Contains data from Electricity Maps
// (https://www.electricitymaps.com), made available under the Open
// Database License (ODbL) 1.0." (see NOTICE). The repository that
// published them is Apache-2.0.
//
// Read a series with carbon.Read, which decompresses gzip and recognises
// the portal format (Basis selects its direct or life-cycle column):
//
//	f, _ := carbondata.FS.Open(carbondata.California2022)
//	s, err := carbon.Read(f, carbon.ReadOptions{Basis: carbon.Direct})
package carbondata

import "embed"

// The embedded files, by region: hourly, 2022, UTC, g CO2eq/kWh.
const (
	California2022 = "electricitymaps_US-CAL-CISO_2022_hourly.csv.gz"
	Spain2022      = "electricitymaps_ES_2022_hourly.csv.gz"
	Norway2022     = "electricitymaps_NO_2022_hourly.csv.gz"
)

// FS holds the embedded files. It is read-only and safe for concurrent use.
//
//go:embed *.csv.gz
var FS embed.FS
