package client_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/examples/kubernetes/client"
	"github.com/goodsched/goodsched/goodput"
)

func TestMeterTakeAggregates(t *testing.T) {
	var m client.Meter
	a, b := client.Shape{Nodes: 1, Replicas: 2, Local: 64}, client.Shape{Nodes: 1, Replicas: 2, Local: 64, Accum: 1}
	m.Optim(a, 100*time.Millisecond, 10*time.Millisecond)
	m.Optim(a, 300*time.Millisecond, 30*time.Millisecond)
	m.Accum(b, 50*time.Millisecond)
	m.Optim(b, 70*time.Millisecond, 0)
	m.Accum(client.Shape{Nodes: 4, Replicas: 4, Local: 1}, time.Second) // no optimizer step yet: kept
	got := m.Take()
	if len(got) != 2 {
		t.Fatalf("Take: %+v", got)
	}
	near := func(x, y float64) bool { return x-y < 1e-12 && y-x < 1e-12 }
	if g := got[0]; g.Count != 2 || !near(g.OptimSeconds, 0.2) || !near(g.SyncSeconds, 0.02) || g.AccumCount != 0 {
		t.Errorf("shape a: %+v", g)
	}
	if g := got[1]; g.Accum != 1 || g.AccumCount != 1 || !near(g.AccumSeconds, 0.05) || !near(g.OptimSeconds, 0.07) {
		t.Errorf("shape b: %+v", g)
	}
	if len(m.Take()) != 0 {
		t.Error("Take twice returned the same measurements")
	}
	// A failed report's measurements go back and merge with new ones.
	m.Restore(got)
	m.Optim(a, 200*time.Millisecond, 20*time.Millisecond)
	again := m.Take()
	if len(again) != 2 {
		t.Fatalf("after Restore: %+v", again)
	}
	if g := again[0]; g.Count != 3 || !near(g.OptimSeconds, 0.2) || !near(g.SyncSeconds, 0.02) || g.SyncCount != 3 {
		t.Errorf("shape a after Restore: %+v", g)
	}
	if g := again[1]; g.AccumCount != 1 || !near(g.AccumSeconds, 0.05) || g.Count != 1 {
		t.Errorf("shape b after Restore: %+v", g)
	}
	if data, _ := json.Marshal(again[0]); strings.Contains(string(data), "ync_count") {
		t.Errorf("SyncCount is sent: %s", data)
	}
}

func TestReportOverTLS(t *testing.T) {
	var got client.Report
	var auth string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != client.Path || r.Method != http.MethodPost {
			http.Error(w, "wrong endpoint", http.StatusNotFound)
			return
		}
		auth = r.Header.Get("Authorization")
		if auth != "Bearer tok" {
			http.Error(w, "report: unauthenticated", http.StatusUnauthorized)
			return
		}
		_ = json.NewDecoder(r.Body).Decode(&got)
		_ = json.NewEncoder(w).Encode(client.Response{Plan: goodput.BatchPlan{Batch: 512, Local: 128, Accum: 1}, Replicas: 2, Nodes: 1, Adaptive: true})
	}))
	defer srv.Close()
	dir := t.TempDir()
	caFile, tokFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokFile, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{URL: srv.URL, Job: "ml/a", TokenFile: tokFile, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	limits := goodput.Limits{InitBatch: 128, MaxBatch: 4096}
	resp, err := c.Report(context.Background(), client.Report{Limits: &limits, Steps: []client.Steps{{Nodes: 1, Replicas: 1, Local: 128, Count: 3, OptimSeconds: 0.1}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Plan.Local != 128 || resp.Replicas != 2 || !resp.Adaptive || got.Job != "ml/a" || got.Limits == nil || len(got.Steps) != 1 {
		t.Fatalf("response %+v, request %+v", resp, got)
	}
	// A rotated token is read again; a refusal is a StatusError.
	if err := os.WriteFile(tokFile, []byte("other"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = c.Report(context.Background(), client.Report{})
	var se *client.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized || !errors.Is(err, client.ErrStatus) {
		t.Fatalf("refused report: %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []client.Config{{URL: "", Job: "a/b"}, {URL: "https://x", Job: "b"}, {URL: "https://x", Job: "a/b", CAFile: "/nonexistent"}} {
		if _, err := client.New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

// TestReportRetriesNonLeaderOnNewConnection checks that a 503 (a replica
// that is not the leader) is retried on a new connection until the leader
// answers, and that a replica that never leads gives up after LeaderTries.
func TestReportRetriesNonLeaderOnNewConnection(t *testing.T) {
	var posts int
	conns := map[string]bool{}
	leaderAfter := 3
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts++
		conns[r.RemoteAddr] = true
		if posts <= leaderAfter {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "report: this replica is not the leader", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(client.Response{Replicas: 4})
	}))
	defer srv.Close()
	dir := t.TempDir()
	caFile, tokFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokFile, []byte("tok"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{URL: srv.URL, Job: "ml/a", TokenFile: tokFile, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Report(context.Background(), client.Report{})
	if err != nil || resp.Replicas != 4 {
		t.Fatalf("Report = %+v, %v; want the leader's answer", resp, err)
	}
	if posts != leaderAfter+1 || len(conns) != posts {
		t.Errorf("%d posts on %d connections, want %d on as many", posts, len(conns), leaderAfter+1)
	}
	posts, leaderAfter = 0, 1<<30
	_, err = c.Report(context.Background(), client.Report{})
	var se *client.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusServiceUnavailable || posts != client.LeaderTries {
		t.Errorf("with no leader: %v after %d posts, want a 503 StatusError after %d", err, posts, client.LeaderTries)
	}
}

// TestReconfigure: the poll carries only the question, and the answer (or
// its absence, from an endpoint that does not speak DMR) comes back.
func TestReconfigure(t *testing.T) {
	var got map[string]any
	answer := true
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = nil
		_ = json.NewDecoder(r.Body).Decode(&got)
		resp := client.Response{Replicas: 4}
		if answer {
			resp.Reconfigure = &client.Reconfiguration{Verdict: "shrink", To: 2, Reason: "queued job q needs 2"}
		}
		_ = json.NewEncoder(w).Encode(resp)
	}))
	defer srv.Close()
	dir := t.TempDir()
	caFile, tokFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokFile, []byte("tok"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{URL: srv.URL, Job: "ml/a", TokenFile: tokFile, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.Reconfigure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rc.Verdict != "shrink" || rc.To != 2 || rc.Reason == "" {
		t.Fatalf("answer %+v", rc)
	}
	if len(got) != 2 || got["job"] != "ml/a" || got["reconfigure"] != true {
		t.Fatalf("request %v, want only the job and the question", got)
	}
	answer = false
	if _, err := c.Reconfigure(context.Background()); !errors.Is(err, client.ErrNoReconfigure) {
		t.Fatalf("endpoint without DMR: %v", err)
	}
}
