package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestBacktestJSON: a light year (a job a day per region): the oracle
// emits least, the location planner no more than single-region planning,
// which emits no more than agnostic; nothing is missed; bad flags exit 2.
func TestBacktestJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-gap", "24h", "-json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if !(r.OracleKg <= r.LocationKg && r.LocationKg <= r.SingleRegionKg && r.SingleRegionKg <= r.AgnosticKg) || r.Jobs == 0 || len(r.Regions) != 3 {
		t.Errorf("%+v", r)
	}
	if r.MissedDeviceHours != [4]int{} {
		t.Errorf("missed %v", r.MissedDeviceHours)
	}
	if code := run([]string{"-devices", "0"}, &out, &errb); code != 2 {
		t.Errorf("-devices 0: exit %d", code)
	}
}
