package report_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"math"
	"os"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/goodsched/goodsched/examples/kubernetes/client"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/report"
)

// pod creates a pod in "ml" with the trainer ServiceAccount and returns
// its token file.
func (e *env) pod(name string, labels map[string]string, owners ...metav1.OwnerReference) (string, *corev1.Pod) {
	e.t.Helper()
	p, err := e.cs.CoreV1().Pods("ml").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, OwnerReferences: owners},
		Spec: corev1.PodSpec{ServiceAccountName: "trainer", NodeName: "n1", Containers: []corev1.Container{{Name: "train", Image: "trainer"}}}},
		metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.token(p), p
}

// newJob creates a suspended Job with no pods.
func (e *env) newJob(name string) *batchv1.Job {
	e.t.Helper()
	suspend := true
	j, err := e.cs.BatchV1().Jobs("ml").Create(context.Background(), &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Suspend: &suspend, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "train", Image: "trainer"}}}}}},
		metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// statesOf returns every state ConfigMap (any namespace) that holds job's
// measurements.
func (e *env) statesOf(job string) []corev1.ConfigMap {
	e.t.Helper()
	l, err := e.cs.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{LabelSelector: report.StateLabel + "=" + report.StateLabelValue})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []corev1.ConfigMap
	for _, cm := range l.Items {
		if cm.Annotations[report.JobAnnotation] == job {
			out = append(out, cm)
		}
	}
	return out
}

// TestTenantRecreatedJobAndForgedReporters (issue 41, item 5): a Job is
// deleted and re-created under the same name. The new Job's first report
// is acknowledged into a state that no dead object owns (the garbage
// collector would delete it with the old Job), and the old Job's pod can no
// longer write. Within the namespace, a pod merely labelled with the Job's
// name as its group, or carrying a forged controller reference, is not
// accepted as the Job's reporter. A pod group whose name is not a valid
// ConfigMap name still gets its state.
func TestTenantRecreatedJobAndForgedReporters(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	rep := client.Report{Limits: &limits, Steps: []client.Steps{{Nodes: 1, Replicas: 1, Local: 128, Count: 20, OptimSeconds: 0.104, SyncSeconds: 0.0005}}}
	oldTok, oldPod := e.job("a")
	if _, err := e.client("ml/a", oldTok).Report(ctx, rep); err != nil {
		t.Fatalf("first Job's report: %v", err)
	}
	// Re-create the Job (no garbage collector runs here: the old pod and
	// state stay, as they do for a while in a real cluster).
	bg := metav1.DeletePropagationBackground
	if err := e.cs.BatchV1().Jobs("ml").Delete(ctx, "a", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	oldUID := oldPod.OwnerReferences[0].UID
	newJob := e.newJob("a")
	yes := true
	newTok, _ := e.pod("a-new-0", nil, metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "a", UID: newJob.UID, Controller: &yes})
	rep2 := client.Report{Limits: &limits, Steps: []client.Steps{{Nodes: 1, Replicas: 2, Local: 128, Count: 10, OptimSeconds: 0.12, SyncSeconds: 0.01}}}
	if _, err := e.client("ml/a", newTok).Report(ctx, rep2); err != nil {
		t.Fatalf("re-created Job's report: %v", err)
	}
	// The acknowledged report must live in a state that no dead object
	// owns: what the garbage collector deletes with the old Job.
	held := false
	for _, cm := range e.statesOf("ml/a") {
		for _, o := range cm.OwnerReferences {
			if o.UID == oldUID {
				t.Errorf("state %s/%s holding the new Job's report is owned by the deleted Job (uid %s): the garbage collector deletes it", cm.Namespace, cm.Name, oldUID)
			}
		}
		if strings.Contains(cm.Data[report.StateKey], `"replicas":2`) {
			held = true
			if strings.Contains(cm.Data[report.StateKey], `"replicas":1,`) {
				t.Errorf("the re-created Job's state %s/%s carries the old Job's measurements", cm.Namespace, cm.Name)
			}
		}
	}
	if !held {
		t.Errorf("no state holds the re-created Job's acknowledged report")
	}
	// The old Job's pod may not write any more.
	if _, err := e.client("ml/a", oldTok).Report(ctx, rep); code(err) != 403 {
		t.Errorf("the deleted Job's pod reporting for the re-created Job: %v, want 403", err)
	}
	// A pod labelled with the Job's name as its group.
	tok, _ := e.pod("labelled", map[string]string{"goodsched.io/group": "a"})
	if _, err := e.client("ml/a", tok).Report(ctx, rep2); code(err) != 403 {
		t.Errorf("a pod merely labelled goodsched.io/group=a reporting for Job a: %v, want 403", err)
	}
	// A pod with a forged controller reference naming the Job.
	tok, _ = e.pod("forged", nil, metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "a", UID: types.UID("f0f0f0f0-0000-4000-8000-000000000000"), Controller: &yes})
	if _, err := e.client("ml/a", tok).Report(ctx, rep2); code(err) != 403 {
		t.Errorf("a pod with a forged owner reference reporting for Job a: %v, want 403", err)
	}
	// A pod group named by any valid label value.
	group := "Train_Run.A"
	tok, _ = e.pod("grouped", map[string]string{"goodsched.io/group": group})
	if _, err := e.client("ml/"+group, tok).Report(ctx, rep); err != nil {
		t.Errorf("group %q: %v, want its report stored", group, err)
	} else if len(e.statesOf("ml/"+group)) != 1 {
		t.Errorf("group %q: no state stored", group)
	}
}

// TestTenantSmallerRefusals (issue 41, item 6): a count of MaxInt64 twice
// is refused with 400, not stored negative; a sum overflowing to +Inf is
// a 400 (permanent), not a 503 that clients retry; TLS 1.2 offers no
// CBC-SHA1 suite.
func TestTenantSmallerRefusals(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	tok, _ := e.job("a")
	c := e.client("ml/a", tok)
	big := client.Report{Limits: &limits, Steps: []client.Steps{{Nodes: 1, Replicas: 1, Local: 128, Count: math.MaxInt64, OptimSeconds: 0.1}}}
	_, err1 := c.Report(ctx, big)
	_, err2 := c.Report(ctx, big)
	if err1 == nil && err2 == nil {
		t.Errorf("two reports of count MaxInt64 both accepted")
	}
	if err2 != nil && code(err2) != 400 {
		t.Errorf("second MaxInt64 count: %v, want 400", err2)
	}
	for _, cm := range e.statesOf("ml/a") {
		if strings.Contains(cm.Data[report.StateKey], `"optim_count":-`) {
			t.Errorf("a negative count is stored: %s", cm.Data[report.StateKey])
		}
	}
	tok2, _ := e.job("b")
	c2 := e.client("ml/b", tok2)
	inf := client.Report{Limits: &limits, Steps: []client.Steps{{Nodes: 1, Replicas: 1, Local: 128, Count: 1 << 40, OptimSeconds: 1e300}}}
	if _, err := c2.Report(ctx, inf); code(err) != 400 {
		t.Errorf("a sum overflowing to +Inf: %v, want 400", err)
	}
	// TLS 1.2 with only CBC-SHA1 suites: the handshake must fail.
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(e.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	addr := strings.TrimPrefix(e.url, "https://")
	for _, suite := range []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
		tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_128_CBC_SHA} {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{suite}})
		if err == nil {
			conn.Close()
			t.Errorf("TLS 1.2 handshake with %s succeeded", tls.CipherSuiteName(suite))
		}
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12})
	if err != nil {
		t.Errorf("TLS 1.2 with the default suites: %v", err)
	} else {
		t.Logf("TLS 1.2 negotiates %s", tls.CipherSuiteName(conn.ConnectionState().CipherSuite))
		conn.Close()
	}
}
