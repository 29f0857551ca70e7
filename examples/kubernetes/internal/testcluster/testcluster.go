// Package testcluster runs a real Kubernetes control plane on loopback for
// integration tests: etcd, kube-apiserver and, on request,
// kube-controller-manager (for the Job controller) and kwok (fake kubelets
// for nodes annotated kwok.x-k8s.io/node=fake).
//
// The binaries come from hack/testbin.sh, which builds them from the Go
// module proxy and prints the directory that KUBEBUILDER_ASSETS must name.
// Without that variable a test skips with one line naming the script; when
// CI is set the test fails instead, so CI never skips.
//
// A cluster leaves nothing behind. Each process runs in a process group of
// its own and is killed with it when the test ends; on Linux the kernel
// also kills it when the test binary dies (a panic, go test's -timeout,
// SIGKILL). SIGINT or SIGTERM to the test binary stops every running
// cluster and removes its directory before the binary exits, and Start
// removes the directories that dead test binaries left.
package testcluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Hint is the line a test prints when it skips for want of the binaries.
const Hint = "integration test skipped: set KUBEBUILDER_ASSETS=$(examples/kubernetes/hack/testbin.sh) to build and use kube-apiserver, etcd and kwok"

// KwokNodeAnnotation marks a Node for kwok to manage (heartbeats, pod
// status); every fake node a test creates must carry it with value "fake".
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// Options says which parts of the control plane a test needs.
type Options struct {
	// ControllerManager runs kube-controller-manager with the job, deployment, replicaset,
	// garbage-collector and service-account controllers.
	ControllerManager bool
	// Kwok runs kwok, which makes nodes annotated KwokNodeAnnotation=fake
	// Ready and moves their bound pods to Running.
	Kwok bool
}

// Cluster is a running control plane. Its methods are safe for concurrent
// use.
type Cluster struct {
	// Config authenticates as a cluster administrator (system:masters).
	Config *rest.Config
	// Client is a clientset built from Config.
	Client kubernetes.Interface
	// Dir holds the cluster's files: certificates, keys, logs, etcd data.
	Dir string
	// Assets is the directory of the binaries.
	Assets string

	t          testing.TB
	apiPort    int
	etcdURL    string
	caData     []byte
	tokens     map[string]string // user → bearer token
	mu         sync.Mutex
	apiserver  *exec.Cmd
	apiExited  chan struct{}
	apiservers int
}

// Assets returns the directory named by KUBEBUILDER_ASSETS when it holds
// the binaries, or skips (fails, under CI) the test with Hint.
func Assets(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	missing := dir == ""
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing = true
		}
	}
	if missing {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but the binaries are missing (KUBEBUILDER_ASSETS=%q): run examples/kubernetes/hack/testbin.sh", dir)
		}
		t.Skip(Hint)
	}
	return dir
}

// Start runs a control plane for the test and stops it when the test ends.
// Users named in users get a bearer token (see Token) and no permissions
// beyond what the test grants them through RBAC.
func Start(t testing.TB, opts Options, users ...string) *Cluster {
	t.Helper()
	assets := Assets(t)
	dir := newDir(t)
	c := &Cluster{t: t, Dir: dir, Assets: assets, tokens: map[string]string{}}
	c.writeKeys()
	c.writeTokens(users)

	etcdPort, peerPort := freePort(t), freePort(t)
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	c.spawn("etcd", filepath.Join(assets, "etcd"),
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", c.etcdURL, "--advertise-client-urls", c.etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL, "--unsafe-no-fsync",
		"--log-level", "warn")
	c.waitHTTP(c.etcdURL+"/health", nil, "etcd")

	c.apiPort = freePort(t)
	c.StartAPIServer()
	c.Config = c.userConfig("admin")
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatalf("testcluster: clientset: %v", err)
	}
	c.Client = cs
	kubeconfig := c.WriteKubeconfig("admin")

	if opts.ControllerManager {
		c.spawn("kube-controller-manager", filepath.Join(assets, "kube-controller-manager"),
			"--kubeconfig", kubeconfig,
			"--controllers", "job,deployment,replicaset,garbagecollector,serviceaccount,serviceaccount-token",
			"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
			"--service-account-private-key-file", filepath.Join(dir, "sa.key"),
			"--root-ca-file", filepath.Join(dir, "ca.crt"),
			"--concurrent-job-syncs=20", "--concurrent-gc-syncs=20",
			"--kube-api-qps=1000", "--kube-api-burst=2000", "-v=1")
	}
	if opts.Kwok {
		c.spawn("kwok", filepath.Join(assets, "kwok"),
			"--kubeconfig", kubeconfig,
			"--config", filepath.Join(assets, "kwok-stages.yaml"),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector", KwokNodeAnnotation+"=fake",
			"--node-ip=127.0.0.1",
			"--server-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	}
	return c
}

// Token returns the bearer token of a user named in Start.
func (c *Cluster) Token(user string) string { return c.tokens[user] }

// UserConfig returns a client configuration that authenticates as a user
// named in Start.
func (c *Cluster) UserConfig(user string) *rest.Config {
	if _, ok := c.tokens[user]; !ok {
		c.t.Fatalf("testcluster: user %q was not named in Start", user)
	}
	return c.userConfig(user)
}

func (c *Cluster) userConfig(user string) *rest.Config {
	return &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", c.apiPort),
		BearerToken:     c.tokens[user],
		TLSClientConfig: rest.TLSClientConfig{CAData: c.caData},
		QPS:             1000,
		Burst:           2000,
	}
}

// WriteKubeconfig writes a kubeconfig for a user named in Start (or
// "admin") and returns its path.
func (c *Cluster) WriteKubeconfig(user string) string {
	path := filepath.Join(c.Dir, user+".kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:%d
    certificate-authority: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: %s}
current-context: test
`, c.apiPort, filepath.Join(c.Dir, "ca.crt"), user, c.tokens[user], user)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
	return path
}

// StopAPIServer kills kube-apiserver (SIGKILL, as a crash would) and waits
// until it has exited. etcd keeps the cluster's state.
func (c *Cluster) StopAPIServer() {
	c.mu.Lock()
	cmd, exited := c.apiserver, c.apiExited
	c.apiserver = nil
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	killGroup(cmd.Process.Pid)
	<-exited
}

// StartAPIServer starts kube-apiserver on the cluster's port (again, after
// StopAPIServer) and waits until it is ready.
func (c *Cluster) StartAPIServer() {
	c.mu.Lock()
	if c.apiserver != nil {
		c.mu.Unlock()
		return
	}
	c.apiservers++
	n := c.apiservers
	c.mu.Unlock()
	d := c.Dir
	cmd, exited := c.spawnCmd(fmt.Sprintf("kube-apiserver-%d", n), filepath.Join(c.Assets, "kube-apiserver"),
		"--etcd-servers", c.etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", c.apiPort),
		"--cert-dir", filepath.Join(d, "certs"),
		"--tls-cert-file", filepath.Join(d, "serving.crt"),
		"--tls-private-key-file", filepath.Join(d, "serving.key"),
		"--service-account-issuer=https://127.0.0.1",
		"--service-account-key-file", filepath.Join(d, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(d, "sa.key"),
		"--token-auth-file", filepath.Join(d, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		"--disable-admission-plugins=ServiceAccount",
		"--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000",
		"-v=0")
	c.mu.Lock()
	c.apiserver, c.apiExited = cmd, exited
	c.mu.Unlock()
	c.waitHTTP(fmt.Sprintf("https://127.0.0.1:%d/readyz", c.apiPort), c.tokens, "kube-apiserver")
}

// spawn starts a process for the rest of the test.
func (c *Cluster) spawn(name, bin string, args ...string) {
	c.spawnCmd(name, bin, args...)
}

func (c *Cluster) spawnCmd(name, bin string, args ...string) (*exec.Cmd, chan struct{}) {
	t := c.t
	logPath := filepath.Join(c.Dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = ownGroup()
	if err := cmd.Start(); err != nil {
		t.Fatalf("testcluster: start %s: %v", name, err)
	}
	live.add(cmd.Process.Pid)
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		live.remove(cmd.Process.Pid)
		close(exited)
	}()
	t.Cleanup(func() {
		killGroup(cmd.Process.Pid)
		<-exited
		if t.Failed() {
			t.Logf("testcluster: last lines of %s:\n%s", name, Tail(logPath, 15))
		}
	})
	return cmd, exited
}

// waitHTTP polls url until it answers 200, for up to a minute.
func (c *Cluster) waitHTTP(url string, tokens map[string]string, name string) {
	c.t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	if c.caData != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(c.caData)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		if tokens != nil {
			req.Header.Set("Authorization", "Bearer "+tokens["admin"])
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = errors.New(resp.Status)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("testcluster: %s not ready after a minute: %v", name, last)
}

// writeKeys writes the service-account signing key pair and a serving
// certificate for 127.0.0.1 signed by a CA of the test's own (ca.crt).
func (c *Cluster) writeKeys() {
	t := c.t
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	writePEM(t, filepath.Join(c.Dir, "sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
	writePEM(t, filepath.Join(c.Dir, "sa.pub"), "PUBLIC KEY", pub)

	caCert, caKey, err := SelfSignedCA("testcluster-ca")
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	certPEM, keyPEM, err := ServingCert(caCert, caKey, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	c.caData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw})
	for name, data := range map[string][]byte{"ca.crt": c.caData, "serving.crt": certPEM, "serving.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(c.Dir, name), data, 0o600); err != nil {
			t.Fatalf("testcluster: %v", err)
		}
	}
}

// writeTokens writes the static token file: admin in system:masters, and
// each named user in no group beyond system:authenticated.
func (c *Cluster) writeTokens(users []string) {
	var b strings.Builder
	for i, u := range append([]string{"admin"}, users...) {
		if _, dup := c.tokens[u]; dup {
			c.t.Fatalf("testcluster: user %q named twice", u)
		}
		tok := randomToken(c.t)
		c.tokens[u] = tok
		group := ""
		if u == "admin" {
			group = "system:masters"
		}
		fmt.Fprintf(&b, "%s,%s,uid-%d,%q\n", tok, u, i, group)
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "tokens.csv"), []byte(b.String()), 0o600); err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
}

func randomToken(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	return hex.EncodeToString(b)
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Tail returns the last n lines of the file at path (or the error reading
// it), for a failing test's log.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
