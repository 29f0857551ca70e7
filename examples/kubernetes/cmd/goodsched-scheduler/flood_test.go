package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/testcluster"
)

// junkToken is shaped like a projected ServiceAccount token (three
// base64url parts, an RS256 header, our audience, a future expiry) but is
// signed by no one: only the API server can tell it is junk.
func junkToken() string {
	enc := base64.RawURLEncoding.EncodeToString
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	sig := make([]byte, 256)
	_, _ = rand.Read(sig)
	claims := fmt.Sprintf(`{"aud":["goodsched"],"exp":%d,"iat":%d,"iss":"https://127.0.0.1","sub":"system:serviceaccount:ml:trainer","jti":"%x"}`,
		time.Now().Add(10*time.Minute).Unix(), time.Now().Unix(), nonce)
	return enc([]byte(`{"alg":"RS256","kid":"k"}`)) + "." + enc([]byte(claims)) + "." + enc(sig)
}

// median of the latencies of n calls of f.
func medianLatency(n int, f func() error) (time.Duration, error) {
	var ds []time.Duration
	for range n {
		t0 := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t0))
		time.Sleep(20 * time.Millisecond)
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// TestFloodJunkReportsKeepHostAPIFast (issue 41, item 2) wires the
// scheduler's clients and report endpoint as the binary does, leads, and
// floods the endpoint with 1,000 concurrent clients posting junk tokens
// (two reports a second each, for 4 s). The host's own API calls (a GET
// through the scheduler's client, as a lease renewal is) must stay within
// 2× of their idle latency.
func TestFloodJunkReportsKeepHostAPIFast(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{})
	dir := t.TempDir()
	ca, caKey, err := testcluster.SelfSignedCA("report-ca")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := testcluster.ServingCert(ca, caKey, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	sched, reportCS, err := newClients(c.Config, 500, 2000) // the binary's defaults
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, namespace(host.DefaultLeaseNamespace), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The shipped NetworkPolicy is valid (this API server enforces none:
	// the flood below comes from a pod it would not admit).
	data, err := os.ReadFile("../../deploy/report-networkpolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var np networkingv1.NetworkPolicy
	if err := yaml.UnmarshalStrict(data, &np); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.NetworkingV1().NetworkPolicies(np.Namespace).Create(ctx, &np, metav1.CreateOptions{}); err != nil {
		t.Fatalf("deploy/report-networkpolicy.yaml: %v", err)
	}
	rep := reportFlags{addr: addr, cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key"), rate: 1, burst: 20}
	log := slog.New(slog.DiscardHandler)
	models, serve, err := rep.setup(ctx, reportCS, log)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.Config{Client: sched, Models: models, Identity: "flood", Logger: log, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(2)
	go func() { defer wg.Done(); _ = h.Run(ctx) }()
	go func() { defer wg.Done(); _ = serve(ctx, h) }()
	for deadline := time.Now().Add(20 * time.Second); !h.IsLeader(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the host does not lead")
		}
	}

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 1000}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	post := func() (int, error) {
		req, _ := http.NewRequest(http.MethodPost, "https://"+addr+"/v1/report", bytes.NewReader([]byte(`{"job":"ml/a","steps":[]}`)))
		req.Header.Set("Authorization", "Bearer "+junkToken())
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, err := post(); err == nil {
			t.Logf("a junk report: HTTP %d", code)
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("report endpoint: %v", err)
		}
	}

	hostCall := func(cs kubernetes.Interface) func() error {
		return func() error {
			_, err := cs.CoreV1().Namespaces().Get(ctx, host.DefaultLeaseNamespace, metav1.GetOptions{})
			return err
		}
	}
	idle, err := medianLatency(40, hostCall(sched))
	if err != nil {
		t.Fatal(err)
	}

	floodCtx, stopFlood := context.WithTimeout(ctx, 4*time.Second)
	defer stopFlood()
	var fwg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 1000 {
		fwg.Add(1)
		go func() {
			defer fwg.Done()
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for {
				code, err := post()
				mu.Lock()
				if err != nil {
					codes[-1]++
				} else {
					codes[code]++
				}
				mu.Unlock()
				select {
				case <-floodCtx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}
	time.Sleep(time.Second) // the flood is under way
	flood, err := medianLatency(40, hostCall(sched))
	stopFlood()
	fwg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("host API GET median: idle %v, under 1,000 concurrent junk reporters %v (%.1f×); responses by code %v",
		idle, flood, float64(flood)/float64(idle), codes)
	if flood > 2*max(idle, time.Millisecond) {
		t.Errorf("the host's API latency went from %v idle to %v under the flood: over 2×", idle, flood)
	}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// TestTenantMetricsServerTimeouts (issue 41, item 6): the metrics port
// closes idle connections and bounds every phase of a request.
func TestTenantMetricsServerTimeouts(t *testing.T) {
	srv := metricsServer(http.NotFoundHandler())
	if srv.IdleTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.ReadHeaderTimeout <= 0 {
		t.Errorf("metrics server timeouts: idle %v, read %v, write %v, header %v: want all set",
			srv.IdleTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.ReadHeaderTimeout)
	}
}
