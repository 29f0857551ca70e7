package report

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestTrainerErrorIsLogged: a report's Error (the trainer kept its plan,
// e.g. a global batch its data loader cannot reach) is logged with the job
// and pod, cut to client.MaxErrorBytes; the report itself is stored.
func TestTrainerErrorIsLogged(t *testing.T) {
	var buf bytes.Buffer
	f := newFixture(t, Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	rep := report("ml/a")
	rep.Error = "global batch 4096 is over the 1437 samples" + strings.Repeat("x", 3000)
	if code, _, body := f.post("tok-a-0", rep); code != http.StatusOK {
		t.Fatalf("code %d: %s", code, body)
	}
	log := buf.String()
	if !strings.Contains(log, "kept its plan") || !strings.Contains(log, "job=ml/a") || !strings.Contains(log, "pod=a-0") ||
		!strings.Contains(log, "global batch 4096") || strings.Contains(log, strings.Repeat("x", 1100)) {
		t.Errorf("log %q", log)
	}
	if st := f.s.State("ml/a"); st == nil || st.Reports != 1 {
		t.Errorf("state %+v, want the report stored", st)
	}
}
