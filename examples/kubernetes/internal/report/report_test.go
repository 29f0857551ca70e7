package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/examples/kubernetes/client"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/scheduler"
)

// fakeTokens makes a fake clientset answer TokenReviews: "tok-<pod>" is a
// valid token of pod <pod> in namespace ns; anything else is rejected.
func fakeTokens(cs *fake.Clientset, ns string, uids map[string]types.UID) {
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview).DeepCopy()
		pod, ok := strings.CutPrefix(fakeJWTSecret(tr.Spec.Token), "tok-")
		uid, known := uids[pod]
		if !ok || !known || len(tr.Spec.Audiences) != 1 || tr.Spec.Audiences[0] != Audience {
			tr.Status = authnv1.TokenReviewStatus{Authenticated: false, Error: "invalid bearer token"}
			return true, tr, nil
		}
		tr.Status = authnv1.TokenReviewStatus{Authenticated: true, Audiences: []string{Audience}, User: authnv1.UserInfo{
			Username: "system:serviceaccount:" + ns + ":trainer",
			Extra:    map[string]authnv1.ExtraValue{extraPodName: {pod}, extraPodUID: {string(uid)}},
		}}
		return true, tr, nil
	})
}

// fakeJWT wraps a test token into a JWT's shape (our audience, a
// ServiceAccount subject, an expiry an hour ahead), as the endpoint checks
// before any TokenReview; fakeJWTSecret gets the test token back.
func fakeJWT(token string) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims := fmt.Sprintf(`{"aud":[%q],"exp":%d,"sub":"system:serviceaccount:ml:trainer"}`, Audience, time.Now().Add(time.Hour).Unix())
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(claims)) + "." + enc([]byte(token))
}

func fakeJWTSecret(jwt string) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return ""
	}
	b, _ := base64.RawURLEncoding.DecodeString(parts[2])
	return string(b)
}

// fakeJob is a Job of the fixtures, with the UID jobPod refers to.
func fakeJob(ns, name string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("job-" + name)}}
}

func jobPod(ns, name, job string, uid types.UID) *corev1.Pod {
	ctrl := true
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job, UID: types.UID("job-" + job), Controller: &ctrl}}},
		Spec: corev1.PodSpec{NodeName: "n1"}}
}

type fixture struct {
	t  *testing.T
	cs *fake.Clientset
	s  *Server
	h  http.Handler
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	pods := []runtime.Object{
		jobPod("ml", "a-0", "a", "uid-a0"),
		jobPod("ml", "b-0", "b", "uid-b0"),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "g-0", UID: "uid-g0", Labels: map[string]string{host.LabelGroup: "g"}}},
	}
	// A pod of Job a whose template also carries group g's label: it is
	// Job a's pod only.
	a1 := jobPod("ml", "a-1", "a", "uid-a1")
	a1.Labels = map[string]string{host.LabelGroup: "g"}
	pods = append(pods, a1)
	pods = append(pods, fakeJob("ml", "a"), fakeJob("ml", "b"))
	cs := fake.NewClientset(pods...)
	fakeTokens(cs, "ml", map[string]types.UID{"a-0": "uid-a0", "a-1": "uid-a1", "b-0": "uid-b0", "g-0": "uid-g0", "gone": "uid-gone"})
	cfg.Client = cs
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, cs: cs, s: s, h: s}
}

func (f *fixture) post(token string, body any) (int, client.Response, string) {
	f.t.Helper()
	var b []byte
	switch v := body.(type) {
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			f.t.Fatal(err)
		}
	}
	req := httptest.NewRequest(http.MethodPost, client.Path, bytes.NewReader(b))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+fakeJWT(token))
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	var resp client.Response
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			f.t.Fatal(err)
		}
	}
	return rec.Code, resp, rec.Body.String()
}

var limits = goodput.Limits{InitBatch: 128, MaxBatch: 4096, MinLocal: 32, MaxLocal: 1024, Accumulation: true}

func report(job string) client.Report {
	return client.Report{Job: job, Limits: &limits,
		Steps: []client.Steps{{Nodes: 1, Replicas: 1, Local: 128, Count: 10, OptimSeconds: 0.1, SyncSeconds: 0.001}},
		Grad:  &goodput.GradStats{Sqr: 1, Var: 100}}
}

// fixtureUID is the UID of the fixtures' Job of a job key ("" for a
// group).
func fixtureUID(job string) types.UID {
	if job == "ml/a" || job == "ml/b" {
		return types.UID("job-" + strings.TrimPrefix(job, "ml/"))
	}
	return ""
}

func (f *fixture) stateRV(job string) string {
	f.t.Helper()
	cm, err := f.cs.CoreV1().ConfigMaps(DefaultStateNamespace).Get(context.Background(), StateName(job, fixtureUID(job)), metav1.GetOptions{})
	if err != nil {
		return "<none>"
	}
	return cm.ResourceVersion + "|" + cm.Data[StateKey]
}

func TestReportPersistsBeforeAck(t *testing.T) {
	f := newFixture(t, Config{})
	if sp, ok := f.s.Prior("ml/a"); !ok || sp.Speedup("", 1, 1) != 1 || sp.Speedup("", 1, 2) != 0 {
		t.Fatalf("Prior before any report: %v %v, want one GPU", sp, ok)
	}
	code, resp, body := f.post("tok-a-0", report("ml/a"))
	if code != http.StatusOK {
		t.Fatalf("code %d: %s", code, body)
	}
	if !resp.Adaptive || resp.Observations != 1 {
		t.Fatalf("response %+v, want adaptive with 1 observation", resp)
	}
	cm, err := f.cs.CoreV1().ConfigMaps(DefaultStateNamespace).Get(context.Background(), StateName("ml/a", "job-a"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("state not written before the ack: %v", err)
	}
	if cm.Annotations[JobUIDAnnotation] != "job-a" || cm.Annotations[JobAnnotation] != "ml/a" {
		t.Fatalf("state annotations %+v, want the Job's key and UID", cm.Annotations)
	}
	st, err := decodeState(cm.Data[StateKey])
	if err != nil || len(st.Configs) != 1 || st.Configs[0].OptimCount != 10 || st.Limits != limits {
		t.Fatalf("stored state %+v (%v)", st, err)
	}
	if sp, ok := f.s.Speedup("ml/a"); !ok || sp.Speedup("", 1, 1) != 1 {
		t.Fatalf("Speedup after a report: %v %v", sp, ok)
	}
	if _, ok := f.s.Prior("ml/a"); ok {
		t.Fatal("Prior after a report: want none (Speedup has the model)")
	}
	// A pod group's member reports for its group; no owner on the state.
	if code, _, body := f.post("tok-g-0", report("ml/g")); code != http.StatusOK {
		t.Fatalf("group report: %d %s", code, body)
	}
}

func TestReportRefusals(t *testing.T) {
	f := newFixture(t, Config{Rate: 1, Burst: 2})
	if code, _, _ := f.post("tok-a-0", report("ml/a")); code != http.StatusOK {
		t.Fatalf("first report: %d", code)
	}
	before := f.stateRV("ml/a")
	bBefore := f.stateRV("ml/b")
	big := bytes.Repeat([]byte(" "), client.MaxRequestBytes+1)
	noLimits := report("ml/b")
	noLimits.Limits = nil
	badTimes := report("ml/a")
	badTimes.Steps[0].OptimSeconds = -1
	for _, c := range []struct {
		name  string
		token string
		body  any
		code  int
	}{
		{"missing token", "", report("ml/a"), http.StatusUnauthorized},
		{"invalid token", "garbage", report("ml/a"), http.StatusUnauthorized},
		{"foreign pod", "tok-b-0", report("ml/a"), http.StatusForbidden},
		{"job pod with another group's label", "tok-a-1", report("ml/g"), http.StatusForbidden},
		{"foreign namespace", "tok-a-0", report("other/a"), http.StatusForbidden},
		{"deleted pod", "tok-gone", report("ml/a"), http.StatusUnauthorized},
		{"too large", "tok-a-0", big, http.StatusRequestEntityTooLarge},
		{"not json", "tok-a-0", []byte("{"), http.StatusBadRequest},
		{"first report without limits", "tok-b-0", noLimits, http.StatusBadRequest},
		{"negative time", "tok-a-0", badTimes, http.StatusBadRequest},
	} {
		if code, _, body := f.post(c.token, c.body); code != c.code {
			t.Errorf("%s: code %d (%s), want %d", c.name, code, body, c.code)
		}
	}
	if after := f.stateRV("ml/a"); after != before {
		t.Errorf("refused reports changed job a's state:\n%s\n%s", before, after)
	}
	if after := f.stateRV("ml/b"); after != bBefore {
		t.Errorf("refused reports changed job b's state")
	}
	// The rate limit: burst 2, one used above, one by "negative time"
	// (authorised, then invalid), so the next is refused.
	if code, _, _ := f.post("tok-a-0", report("ml/a")); code != http.StatusTooManyRequests {
		t.Errorf("report over the rate: %d, want 429", code)
	}
}

// TestTokenWithoutOurAudienceIsRefused: an authenticated review whose
// status names no audience is for the API server's own audience, not
// goodsched's.
func TestTokenWithoutOurAudienceIsRefused(t *testing.T) {
	f := newFixture(t, Config{})
	f.cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview).DeepCopy()
		if fakeJWTSecret(tr.Spec.Token) != "api-server-token" {
			return false, nil, nil
		}
		tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{
			Username: "system:serviceaccount:ml:trainer",
			Extra:    map[string]authnv1.ExtraValue{extraPodName: {"a-0"}, extraPodUID: {"uid-a0"}},
		}}
		return true, tr, nil
	})
	if code, _, body := f.post("api-server-token", report("ml/a")); code != http.StatusUnauthorized {
		t.Errorf("token without audiences: %d (%s), want 401", code, body)
	}
	if rv := f.stateRV("ml/a"); rv != "<none>" {
		t.Errorf("refused report wrote state %s", rv)
	}
}

// TestNonLeaderAnswers503 checks that a replica that does not lead refuses
// reports with 503 and writes nothing, and answers once it leads.
func TestNonLeaderAnswers503(t *testing.T) {
	var leading atomic.Bool
	f := newFixture(t, Config{Leader: leading.Load})
	if code, _, _ := f.post("tok-a-0", report("ml/a")); code != http.StatusServiceUnavailable {
		t.Fatalf("non-leader: %d, want 503", code)
	}
	if rv := f.stateRV("ml/a"); rv != "<none>" {
		t.Fatalf("non-leader wrote state %s", rv)
	}
	leading.Store(true)
	if code, _, body := f.post("tok-a-0", report("ml/a")); code != http.StatusOK {
		t.Fatalf("leader: %d (%s)", code, body)
	}
}

// TestPublishKeepsOnlyReportingJobs: decisions of jobs that cannot report
// (no state, no batch plan) are not kept, so they do not pile up.
func TestPublishKeepsOnlyReportingJobs(t *testing.T) {
	f := newFixture(t, Config{})
	for i := range 100 {
		f.s.Publish(host.JobKey(fmt.Sprintf("ml/rigid-%d", i)), scheduler.Decision{To: 1})
	}
	f.s.Publish("ml/adaptive", scheduler.Decision{To: 2, Batch: goodput.BatchPlan{Batch: 256, Local: 128}})
	f.s.models.mu.Lock()
	n := len(f.s.models.decisions)
	f.s.models.mu.Unlock()
	if n != 1 {
		t.Errorf("%d decisions kept, want 1 (the adaptive job's)", n)
	}
}

func TestStateRoundTripRefitsSameModel(t *testing.T) {
	s := &State{Job: "ml/a", Limits: limits, Grad: goodput.GradStats{Sqr: 0.5, Var: 40}}
	steps := []client.Steps{
		{Nodes: 1, Replicas: 1, Local: 128, Count: 7, OptimSeconds: 0.1031, SyncSeconds: 0.0007},
		{Nodes: 1, Replicas: 2, Local: 64, Count: 3, OptimSeconds: 0.0713, SyncSeconds: 0.011},
		{Nodes: 1, Replicas: 2, Local: 64, Accum: 1, Count: 5, OptimSeconds: 0.0722, AccumCount: 5, AccumSeconds: 0.0601},
		{Nodes: 2, Replicas: 8, Local: 96, Count: 11, OptimSeconds: 0.2133, SyncSeconds: 0.12},
	}
	for _, st := range steps {
		if err := s.merge(&client.Report{Steps: []client.Steps{st}}, goodput.AnyType); err != nil {
			t.Fatal(err)
		}
	}
	data, err := encodeState(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeState(data)
	if err != nil {
		t.Fatal(err)
	}
	e1, c1 := fitState(s, Config{MaxReplicas: 64})
	e2, c2 := fitState(back, Config{MaxReplicas: 64})
	if c1 == nil || c2 == nil {
		t.Fatal("no curve")
	}
	m1, _ := e1.Model(goodput.AnyType)
	m2, _ := e2.Model(goodput.AnyType)
	if m1 != m2 {
		t.Fatalf("refit after a round trip differs:\n%+v\n%+v", m1, m2)
	}
	for r := 1; r <= 16; r++ {
		if a, b := c1.Speedup("", (r+3)/4, r), c2.Speedup("", (r+3)/4, r); a != b {
			t.Fatalf("speedup at %d: %v vs %v", r, a, b)
		}
	}
	obs := back.Observations()[goodput.AnyType]
	if len(obs) != 3 {
		t.Fatalf("%d observations, want 3 (accum 0 and 1 pooled): %+v", len(obs), obs)
	}
	// (1,2,64) pools 3 steps at 0.0713 and 5 at 0.0722; its pass time comes
	// from the measured accumulation passes.
	if o := obs[1]; abs(o.OptimSeconds-(3*0.0713+5*0.0722)/8) > 1e-12 || abs(o.AccumSeconds-0.0601) > 1e-12 {
		t.Fatalf("pooled observation %+v", o)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestResponseHysteresis(t *testing.T) {
	f := newFixture(t, Config{})
	rep := report("ml/a")
	rep.Steps = append(rep.Steps, client.Steps{Nodes: 1, Replicas: 2, Local: 128, Count: 4, OptimSeconds: 0.12, SyncSeconds: 0.02})
	if code, _, body := f.post("tok-a-0", rep); code != http.StatusOK {
		t.Fatal(body)
	}
	sp, ok := f.s.Speedup("ml/a")
	if !ok {
		t.Fatal("no model")
	}
	best := sp.(goodput.BatchPlanner).BatchPlan("", 1, 2)
	f.s.Publish("ml/a", scheduler.Decision{Job: "ml/a", To: 2, Nodes: 1, Batch: best})
	// A job already near the best plan keeps its own.
	near := goodput.BatchPlan{Local: best.Local - 1, Accum: best.Accum, Batch: (best.Local - 1) * 2 * (best.Accum + 1)}
	code, resp, _ := f.post("tok-a-0", client.Report{Job: "ml/a", Current: &near})
	if code != http.StatusOK || resp.Plan.Local != near.Local || resp.Replicas != 2 {
		t.Fatalf("near plan: code %d, response %+v, want to keep %+v", code, resp, near)
	}
	// A job far from it switches.
	far := goodput.BatchPlan{Local: 32, Batch: 64}
	_, resp, _ = f.post("tok-a-0", client.Report{Job: "ml/a", Current: &far})
	if resp.Plan != best {
		t.Fatalf("far plan: response %+v, want %+v", resp.Plan, best)
	}
}

func TestTokenExpiryShortensCache(t *testing.T) {
	now := time.Unix(1000, 0)
	exp, ok := tokenExpiry("x." + base64.RawURLEncoding.EncodeToString([]byte(`{"exp":1010}`)) + ".y")
	if !ok || !exp.Equal(now.Add(10*time.Second)) {
		t.Fatalf("expiry %v %v", exp, ok)
	}
	if _, ok := tokenExpiry("not-a-jwt"); ok {
		t.Fatal("expiry of a non-JWT")
	}
}

// TestPruneStatesOfDeletedJobs: the state of a Job that is gone is deleted,
// a live Job's and a live pod group's are kept; a pod group's state is
// deleted once live says the group is gone.
func TestPruneStatesOfDeletedJobs(t *testing.T) {
	f := newFixture(t, Config{})
	for _, c := range []struct{ tok, job string }{{"tok-a-0", "ml/a"}, {"tok-b-0", "ml/b"}, {"tok-g-0", "ml/g"}} {
		if code, _, body := f.post(c.tok, report(c.job)); code != http.StatusOK {
			t.Fatalf("%s: %d %s", c.job, code, body)
		}
	}
	pollFor(t, func() bool { return len(f.s.cms.GetStore().List()) == 3 })
	groupAlive := true
	live := func(job host.JobKey, uid types.UID) bool {
		return job == "ml/a" && uid == "job-a" || job == "ml/g" && uid == "" && groupAlive
	}
	// Just written: kept, whatever live says.
	if n, err := f.s.PruneStates(context.Background(), live, time.Hour); err != nil || n != 0 {
		t.Fatalf("pruned %d states written less than an hour ago, %v; want 0", n, err)
	}
	n, err := f.s.PruneStates(context.Background(), live, 0)
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want 1 (Job b's)", n, err)
	}
	if f.stateRV("ml/b") != "<none>" || f.stateRV("ml/a") == "<none>" || f.stateRV("ml/g") == "<none>" {
		t.Errorf("after pruning: a %q, b %q, g %q; want only b's gone", f.stateRV("ml/a"), f.stateRV("ml/b"), f.stateRV("ml/g"))
	}
	groupAlive = false
	pollFor(t, func() bool { return len(f.s.cms.GetStore().List()) == 2 })
	if n, err := f.s.PruneStates(context.Background(), live, 0); err != nil || n != 1 || f.stateRV("ml/g") != "<none>" || f.stateRV("ml/a") == "<none>" {
		t.Errorf("the group gone: pruned %d, %v; a %q, g %q; want g's gone", n, err, f.stateRV("ml/a"), f.stateRV("ml/g"))
	}
}

func pollFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5 s")
		}
	}
}

// TestReconfigure: a job polling at a synchronisation point gets the DMR
// answer of the last published round (expand, shrink, none), without
// limits or measurements and without anything stored.
func TestReconfigure(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := newFixture(t, Config{Now: func() time.Time { return now }})
	poll := client.Report{Job: "ml/a", Reconfigure: true}
	ask := func() client.Reconfiguration {
		t.Helper()
		code, resp, body := f.post("tok-a-0", poll)
		if code != http.StatusOK || resp.Reconfigure == nil {
			t.Fatalf("poll: %d %s", code, body)
		}
		return *resp.Reconfigure
	}
	if got := ask(); got.Verdict != "none" || !strings.Contains(got.Reason, "no scheduling round") {
		t.Fatalf("before any round: %+v", got)
	}
	c, err := accel.ParseSpec("1x8:t4")
	if err != nil {
		t.Fatal(err)
	}
	typ := c.Types()[0]
	elastic := scheduler.Job{ID: "ml/a", Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 8, Submitted: now.Add(-time.Hour)}
	round := func(jobs []scheduler.Job, ds ...scheduler.Decision) {
		f.s.PublishRound(scheduler.Input{Cluster: c, Jobs: jobs, Now: now.Add(-time.Minute)}, scheduler.Plan{Decisions: ds})
	}
	for _, tc := range []struct {
		name    string
		jobs    []scheduler.Job
		plan    []scheduler.Decision
		verdict string
		to      int
	}{
		{"spare devices", []scheduler.Job{elastic}, []scheduler.Decision{{Job: "ml/a", Type: typ, To: 2}}, "expand", 8},
		{"a queued job needs devices", []scheduler.Job{elastic, {ID: "ml/b", Kind: scheduler.Rigid, Requested: 4, Submitted: now}},
			[]scheduler.Decision{{Job: "ml/a", Type: typ, To: 8}, {Job: "ml/b"}}, "shrink", 4},
		{"rigid", []scheduler.Job{{ID: "ml/a", Kind: scheduler.Rigid, Requested: 2}}, []scheduler.Decision{{Job: "ml/a", Type: typ, To: 2}}, "none", 2},
		{"not in the round", []scheduler.Job{{ID: "ml/b", Kind: scheduler.Rigid, Requested: 2}}, []scheduler.Decision{{Job: "ml/b", Type: typ, To: 2}}, "none", 0},
	} {
		round(tc.jobs, tc.plan...)
		if got := ask(); got.Verdict != tc.verdict || got.To != tc.to || got.Reason == "" {
			t.Errorf("%s: %+v, want %s to %d", tc.name, got, tc.verdict, tc.to)
		}
	}
	// Nothing was stored for the polls, and a report without the question
	// carries no answer.
	if rv := f.stateRV("ml/a"); rv != "<none>" {
		t.Fatalf("a poll stored state: %s", rv)
	}
	if code, resp, body := f.post("tok-a-0", report("ml/a")); code != http.StatusOK || resp.Reconfigure != nil {
		t.Fatalf("plain report: %d %+v %s", code, resp.Reconfigure, body)
	}
	// A job's first report that is not a pure poll still needs limits.
	if code, _, _ := f.post("tok-b-0", client.Report{Job: "ml/b", Reconfigure: true, Steps: report("ml/b").Steps}); code != http.StatusBadRequest {
		t.Fatalf("first report with steps and no limits: %d", code)
	}
}
