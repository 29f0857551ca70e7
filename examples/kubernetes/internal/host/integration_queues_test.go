package host_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/testcluster"
)

// grantQueuesRBAC creates deploy/queues.yaml's Role (read one ConfigMap)
// and binds it to user; the sample ConfigMap itself is not created, only
// checked to parse.
func grantQueuesRBAC(t *testing.T, c *testcluster.Cluster, user string) {
	t.Helper()
	const file = "../../deploy/queues.yaml"
	grantRBAC(t, c, user, file)
	for _, cm := range configMapsIn(t, file) {
		if _, err := host.ParseQueueConfig(&cm); err != nil {
			t.Errorf("deploy/queues.yaml's ConfigMap: %v", err)
		}
	}
}

// TestIntegrationQueuesReclaimWithinOneRound: two queues of 4 A100 each on
// one 8-GPU node. An elastic Job of queue vision borrows all 8 while speech
// has no demand; when a 4-pod gang of speech arrives, the round that first
// sees its pods gives it its quota (start 0→4) and shrinks the borrower to
// its own 4 in the same plan, and the gang ends up bound. The scheduler
// reads the queues through deploy/queues.yaml's Role only: that ConfigMap,
// no other.
func TestIntegrationQueuesReclaimWithinOneRound(t *testing.T) {
	c := startCluster(t)
	grantQueuesRBAC(t, c, "scheduler")
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "goodsched-queues", Namespace: host.DefaultLeaseNamespace},
		Data: map[string]string{host.QueuesConfigKey: `queues:
- name: vision
  quotas: [{type: a100, nominal: 4}]
- name: speech
  quotas: [{type: a100, nominal: 4}]
`}}
	if _, err := c.Client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: host.DefaultLeaseNamespace}}
	if _, err := c.Client.CoreV1().ConfigMaps(other.Namespace).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createNodes(t, c, gpuNode("n0", productA100, 8, true))
	elastic := gpuJob("elastic", 1, 1, map[string]string{host.AnnotationKind: "elastic", host.AnnotationMaxReplicas: "8"})
	elastic.Labels = map[string]string{host.LabelQueue: "vision"}
	createJobs(t, c, elastic)

	cs := schedulerClient(t, c, &requestLog{})
	if _, err := cs.CoreV1().ConfigMaps(other.Namespace).Get(ctx, "other", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the scheduler may read another ConfigMap: %v", err)
	}
	h, hctx := startHost(t, host.Config{Client: cs, QueuesConfigMap: host.DefaultLeaseNamespace + "/goodsched-queues"})
	driveUntil(t, hctx, h, 60*time.Second, "the borrower on all 8 GPUs", func() (bool, string) {
		pods := livePods(t, c, "elastic")
		return len(pods) == 8 && boundCount(pods) == 8, fmt.Sprintf("%d pods, %d bound", len(pods), boundCount(pods))
	})

	gang := gpuJob("gang", 4, 1, nil)
	gang.Labels = map[string]string{host.LabelQueue: "speech"}
	createJobs(t, c, gang)
	waitFor(t, 30*time.Second, "the gang's 4 pods", func() (bool, string) {
		n := len(livePods(t, c, "gang"))
		return n == 4, fmt.Sprintf("%d pods", n)
	})
	r, err := h.RoundOnce(hctx)
	if err != nil {
		t.Fatal(err)
	}
	dg, _ := r.Plan.Decision(testNS + "/gang")
	de, _ := r.Plan.Decision(testNS + "/elastic")
	if dg.To != 4 || de.To != 4 {
		t.Fatalf("the reclaim round: gang %v %d→%d (%s), elastic %v %d→%d (%s); want both at 4", dg.Action, dg.From, dg.To, dg.Message, de.Action, de.From, de.To, de.Message)
	}
	t.Logf("reclaim: elastic %v %d→%d (%v): %s", de.Action, de.From, de.To, de.Reason, de.Message)
	found := false
	for _, u := range r.Plan.Queues {
		if u.Queue == "speech" {
			found = true
			if u.Guaranteed != 4 || u.Entitled < 4 {
				t.Errorf("speech usage %+v", u)
			}
		}
	}
	if !found {
		t.Errorf("plan queues %+v lack speech", r.Plan.Queues)
	}
	// The Job controller replaces the evicted pods after its backoff, so
	// the borrower may be below 4 for a while; it never exceeds its 4.
	driveUntil(t, hctx, h, 60*time.Second, "the gang bound, the borrower within its quota", func() (bool, string) {
		g, e := livePods(t, c, "gang"), livePods(t, c, "elastic")
		return boundCount(g) == 4 && boundCount(e) <= 4, fmt.Sprintf("gang %d bound, elastic %d bound of %d", boundCount(g), boundCount(e), len(e))
	})
	checkDevices(t, c, "gang", "elastic")
	if j, err := c.Client.BatchV1().Jobs(testNS).Get(ctx, "elastic", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if d := j.Annotations[host.AnnotationLastDecision]; !strings.Contains(d, "reclaimed by queue speech") {
		t.Errorf("elastic: %s = %q", host.AnnotationLastDecision, d)
	}
}
