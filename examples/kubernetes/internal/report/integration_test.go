package report_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/goodsched/goodsched/examples/kubernetes/client"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/report"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/testcluster"
	"github.com/goodsched/goodsched/goodput"
)

// env is a report server on a real API server, with jobs whose pods hold
// real pod-bound tokens.
type env struct {
	t      *testing.T
	c      *testcluster.Cluster
	cs     kubernetes.Interface
	srvCS  kubernetes.Interface
	url    string
	caFile string
	dir    string
	srv    *report.Server
	cancel context.CancelFunc
}

func startEnv(t *testing.T) *env {
	c := testcluster.Start(t, testcluster.Options{}, "reporter")
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.UserConfig("reporter"))
	if err != nil {
		t.Fatal(err)
	}
	// The server runs as a user holding exactly deploy/report-rbac.yaml;
	// the test sets up objects as the admin.
	e := &env{t: t, c: c, cs: c.Client, srvCS: cs, dir: t.TempDir()}
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().ServiceAccounts("ml").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "trainer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: report.DefaultStateNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grantReportRBAC(t, c, "reporter")
	// It writes ConfigMaps only where granted: not in kube-system.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
	if _, err := cs.CoreV1().ConfigMaps("kube-system").Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the report RBAC lets the scheduler create a ConfigMap in kube-system: %v", err)
	}
	ca, caKey, err := testcluster.SelfSignedCA("report-ca")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := testcluster.ServingCert(ca, caKey, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	e.caFile = filepath.Join(e.dir, "ca.crt")
	write(t, e.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}))
	write(t, filepath.Join(e.dir, "tls.crt"), certPEM)
	write(t, filepath.Join(e.dir, "tls.key"), keyPEM)
	e.startServer()
	return e
}

func (e *env) startServer() {
	t := e.t
	srv, err := report.New(report.Config{Client: e.srvCS, Rate: 100, Burst: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.ServeTLSListener(ctx, ln, filepath.Join(e.dir, "tls.crt"), filepath.Join(e.dir, "tls.key")); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	e.srv, e.url = srv, "https://"+ln.Addr().String()
	e.cancel = func() { cancel(); <-done }
	t.Cleanup(e.cancel)
}

// grantReportRBAC creates the roles and bindings of deploy/rbac.yaml and
// deploy/report-rbac.yaml with user as their subject: the user holds
// exactly what the manifests grant the scheduler's ServiceAccount.
func grantReportRBAC(t *testing.T, c *testcluster.Cluster, user string) {
	t.Helper()
	ctx := context.Background()
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	for _, file := range []string{"../../deploy/rbac.yaml", "../../deploy/report-rbac.yaml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatal(err)
			}
			switch meta.Kind {
			case "ClusterRole":
				var r rbacv1.ClusterRole
				if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
					t.Fatal(err)
				}
				_, err = c.Client.RbacV1().ClusterRoles().Create(ctx, &r, metav1.CreateOptions{})
			case "ClusterRoleBinding":
				var b rbacv1.ClusterRoleBinding
				if err := yaml.Unmarshal([]byte(doc), &b); err != nil {
					t.Fatal(err)
				}
				b.Subjects = subjects
				_, err = c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &b, metav1.CreateOptions{})
			case "Role":
				var r rbacv1.Role
				if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
					t.Fatal(err)
				}
				_, err = c.Client.RbacV1().Roles(r.Namespace).Create(ctx, &r, metav1.CreateOptions{})
			case "RoleBinding":
				var b rbacv1.RoleBinding
				if err := yaml.Unmarshal([]byte(doc), &b); err != nil {
					t.Fatal(err)
				}
				b.Subjects = subjects
				_, err = c.Client.RbacV1().RoleBindings(b.Namespace).Create(ctx, &b, metav1.CreateOptions{})
			default:
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// job creates a suspended batch/v1 Job (no controller runs here) and one
// pod it controls, and returns the pod's token file.
func (e *env) job(name string) (tokenFile string, pod *corev1.Pod) {
	t := e.t
	ctx := context.Background()
	suspend := true
	j, err := e.cs.BatchV1().Jobs("ml").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Suspend: &suspend, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "train", Image: "trainer"}}}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctrl := true
	p, err := e.cs.CoreV1().Pods("ml").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-0",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: j.UID, Controller: &ctrl}}},
		Spec: corev1.PodSpec{ServiceAccountName: "trainer", NodeName: "n1", Containers: []corev1.Container{{Name: "train", Image: "trainer"}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e.token(p), p
}

func (e *env) token(p *corev1.Pod) string {
	t := e.t
	exp := int64(600)
	tr, err := e.cs.CoreV1().ServiceAccounts("ml").CreateToken(context.Background(), "trainer", &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		Audiences: []string{report.Audience}, ExpirationSeconds: &exp,
		BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(e.dir, p.Name+".token")
	write(t, f, []byte(tr.Status.Token))
	return f
}

func (e *env) client(job, tokenFile string) *client.Client {
	c, err := client.New(client.Config{URL: e.url, Job: job, TokenFile: tokenFile, CAFile: e.caFile})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) state(name string) *corev1.ConfigMap {
	j, err := e.cs.BatchV1().Jobs("ml").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	cm, err := e.cs.CoreV1().ConfigMaps(report.DefaultStateNamespace).Get(context.Background(), report.StateName("ml/"+name, j.UID), metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return cm
}

// expire re-signs a real token's claims with an expiry in the past, with
// the API server's own service-account key: a genuine, expired token.
func expire(t *testing.T, keyFile, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	claimsJSON, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(claimsJSON, &claims); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour).Unix()
	claims["exp"], claims["iat"], claims["nbf"] = past, past-600, past-600
	b, _ := json.Marshal(claims)
	signing := parts[0] + "." + base64.RawURLEncoding.EncodeToString(b)
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(keyPEM)
	key, err := x509.ParsePKCS1PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, h[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func code(err error) int {
	var se *client.StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

var limits = goodput.Limits{InitBatch: 128, MaxBatch: 4096, MinLocal: 32, MaxLocal: 1024, Accumulation: true}

// TestRealAPIServerSecurity runs the endpoint against a real kube-apiserver
// with real pod-bound tokens: a pod's report is stored (in a ConfigMap
// owned by its Job) before the ack; a missing, expired or revoked token
// gets 401 and a forged report from another job's pod 403, and neither
// changes anything.
func TestRealAPIServerSecurity(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	tokA, podA := e.job("a")
	tokB, podB := e.job("b")
	ca := e.client("ml/a", tokA)
	rep := client.Report{Limits: &limits, Steps: []client.Steps{{Nodes: 1, Replicas: 1, Local: 128, Count: 20, OptimSeconds: 0.104, SyncSeconds: 0.0005}},
		Grad: &goodput.GradStats{Sqr: 0.01, Var: 2}}
	resp, err := ca.Report(ctx, rep)
	if err != nil {
		t.Fatalf("report of a's pod: %v", err)
	}
	if !resp.Adaptive {
		t.Fatalf("response %+v: want adaptive", resp)
	}
	cm := e.state("a")
	if cm == nil || cm.Annotations[report.JobUIDAnnotation] != string(podA.OwnerReferences[0].UID) {
		t.Fatalf("state of a: %+v", cm)
	}
	rv := cm.ResourceVersion
	t.Logf("accepted: a's pod reporting for a (200, state %s/%s at rv %s)", cm.Namespace, cm.Name, rv)

	// b's pod forges a report for a.
	forged := e.client("ml/a", tokB)
	_, err = forged.Report(ctx, rep)
	t.Logf("forged: b's pod (%s) reporting for a: %v", podB.Name, err)
	if code(err) != 403 {
		t.Errorf("forged report: %v, want 403", err)
	}
	// Missing token.
	empty := filepath.Join(e.dir, "empty.token")
	write(t, empty, nil)
	_, err = e.client("ml/a", empty).Report(ctx, rep)
	t.Logf("missing token: %v", err)
	if code(err) != 401 {
		t.Errorf("missing token: %v, want 401", err)
	}
	// Expired token (a's own claims, signed by the cluster's key).
	raw, _ := os.ReadFile(tokA)
	expired := filepath.Join(e.dir, "expired.token")
	write(t, expired, []byte(expire(t, filepath.Join(e.c.Dir, "sa.key"), string(raw))))
	_, err = e.client("ml/a", expired).Report(ctx, rep)
	t.Logf("expired token: %v", err)
	if code(err) != 401 {
		t.Errorf("expired token: %v, want 401", err)
	}
	// Wrong audience.
	if code(err) == 401 {
		exp := int64(600)
		tr, err := e.cs.CoreV1().ServiceAccounts("ml").CreateToken(ctx, "trainer", &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
			Audiences: []string{"something-else"}, ExpirationSeconds: &exp,
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: podA.Name, UID: podA.UID}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		other := filepath.Join(e.dir, "aud.token")
		write(t, other, []byte(tr.Status.Token))
		_, err = e.client("ml/a", other).Report(ctx, rep)
		t.Logf("wrong audience: %v", err)
		if code(err) != 401 {
			t.Errorf("wrong audience: %v, want 401", err)
		}
	}
	if cm := e.state("a"); cm.ResourceVersion != rv {
		t.Errorf("refused reports changed a's state (rv %s → %s)", rv, cm.ResourceVersion)
	}
	// A deleted pod's token is revoked.
	zero := int64(0)
	if err := e.cs.CoreV1().Pods("ml").Delete(ctx, podB.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := e.cs.CoreV1().Pods("ml").Get(ctx, podB.Name, metav1.GetOptions{}); err != nil {
			break
		}
	}
	_, err = e.client("ml/b", tokB).Report(ctx, rep)
	t.Logf("deleted pod's token: %v", err)
	if code(err) != 401 {
		t.Errorf("deleted pod's token: %v, want 401", err)
	}
	if e.state("b") != nil {
		t.Errorf("job b has state although none of its reports was accepted")
	}
}

// TestRealAPIServerRestartKeepsModels reports a spread of configurations,
// restarts the server (a new process would start from the API server only)
// and checks that the refitted models are the models fitted before.
func TestRealAPIServerRestartKeepsModels(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	tok, _ := e.job("a")
	c := e.client("ml/a", tok)
	shapes := []client.Steps{
		{Nodes: 1, Replicas: 1, Local: 128, Count: 30, OptimSeconds: 0.1041, SyncSeconds: 0.0005},
		{Nodes: 1, Replicas: 2, Local: 128, Count: 25, OptimSeconds: 0.1210, SyncSeconds: 0.012},
		{Nodes: 1, Replicas: 4, Local: 256, Accum: 1, Count: 12, OptimSeconds: 0.2217, AccumCount: 12, AccumSeconds: 0.19},
		{Nodes: 2, Replicas: 8, Local: 128, Count: 40, OptimSeconds: 0.233, SyncSeconds: 0.14},
	}
	for i, s := range shapes {
		g := goodput.GradStats{Sqr: 0.01 * float64(i+1), Var: 3}
		if _, err := c.Report(ctx, client.Report{Limits: &limits, Steps: []client.Steps{s}, Grad: &g}); err != nil {
			t.Fatal(err)
		}
	}
	key := host.JobKey("ml/a")
	before, ok := e.srv.Model(key, goodput.AnyType)
	if !ok {
		t.Fatal("no model before the restart")
	}
	sp, _ := e.srv.Speedup(key)
	e.cancel()
	e.startServer()
	after, ok := e.srv.Model(key, goodput.AnyType)
	if !ok {
		t.Fatal("no model after the restart")
	}
	if before != after {
		t.Fatalf("models differ across a restart:\nbefore %+v\nafter  %+v", before, after)
	}
	sp2, _ := e.srv.Speedup(key)
	for r := 1; r <= 32; r++ {
		n := (r + 3) / 4
		if a, b := sp.Speedup("", n, r), sp2.Speedup("", n, r); a != b {
			t.Fatalf("speedup(%d, %d): %v before, %v after", n, r, a, b)
		}
	}
	t.Logf("refitted after restart: %+v", after.Params)
}
