package report

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	authnv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
)

// Audience is the token audience the endpoint requires.
const Audience = "goodsched"

// Extra keys a pod-bound ServiceAccount token carries in its TokenReview.
const (
	extraPodName = "authentication.kubernetes.io/pod-name"
	extraPodUID  = "authentication.kubernetes.io/pod-uid"
)

// Errors of authentication (HTTP 401) and authorisation (HTTP 403).
var (
	ErrUnauthenticated = errors.New("report: unauthenticated")
	ErrForbidden       = errors.New("report: forbidden")
)

// identity is an authenticated pod.
type identity struct {
	namespace, serviceAccount string
	pod                       string
	podUID                    types.UID
}

// authenticator checks tokens with the TokenReview API and caches positive
// answers for a short time (never past the token's own expiry). Before any
// TokenReview it checks that a token is shaped like a projected
// ServiceAccount token for our audience that has not expired (no review
// for junk), and it remembers rejected tokens (no second review for the
// same junk). At most maxReviews TokenReviews are in flight at once.
type authenticator struct {
	client   kubernetes.Interface
	audience string
	ttl      time.Duration
	now      func() time.Time
	reviews  chan struct{} // semaphore of TokenReviews in flight

	mu       sync.Mutex
	sources  map[string]*rate.Limiter // remote address → its TokenReviews
	cache    map[[32]byte]cached
	rejected map[[32]byte]time.Time // token hash → until when it is refused without a review
}

// maxReviews bounds the TokenReviews in flight; a report that finds them
// all busy is refused with 429 rather than queued.
const maxReviews = 8

// maxTokenBytes caps a bearer token (a projected token is about 1 KiB).
const maxTokenBytes = 8 << 10

// rejectFor is how long a rejected token is refused without a review.
const rejectFor = 5 * time.Minute

// Each source (remote IP) may cause sourceRate TokenReviews a second, in
// bursts of sourceBurst; a pod needs one per token per TokenCacheTTL.
const (
	sourceRate  rate.Limit = 2
	sourceBurst            = 10
	maxSources             = 65536
)

// ErrBusy reports that the endpoint reviews as many tokens as it allows,
// in all or for the request's source (HTTP 429).
var ErrBusy = errors.New("report: too many token reviews")

// checkShape refuses, without any API call, a token that cannot be a
// projected ServiceAccount token for audience: not a JWT of three
// base64url parts, a header without alg, no sub of a service account, not
// for audience, or expired at now.
func checkShape(token, audience string, now time.Time) error {
	if len(token) > maxTokenBytes {
		return fmt.Errorf("%w: token over %d bytes", ErrUnauthenticated, maxTokenBytes)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[2] == "" {
		return fmt.Errorf("%w: not a JWT", ErrUnauthenticated)
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Aud audClaim `json:"aud"`
		Exp int64    `json:"exp"`
		Sub string   `json:"sub"`
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	if err1 != nil || err2 != nil || json.Unmarshal(hb, &hdr) != nil || json.Unmarshal(cb, &claims) != nil || hdr.Alg == "" || hdr.Alg == "none" {
		return fmt.Errorf("%w: not a JWT", ErrUnauthenticated)
	}
	if !strings.HasPrefix(claims.Sub, "system:serviceaccount:") {
		return fmt.Errorf("%w: not a ServiceAccount token", ErrUnauthenticated)
	}
	if !contains(claims.Aud, audience) {
		return fmt.Errorf("%w: token is not for audience %q", ErrUnauthenticated, audience)
	}
	if claims.Exp == 0 || !now.Before(time.Unix(claims.Exp, 0)) {
		return fmt.Errorf("%w: token expired", ErrUnauthenticated)
	}
	return nil
}

// audClaim is a JWT aud claim: a string or a list of strings.
type audClaim []string

func (a *audClaim) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*a = many
	return nil
}

type cached struct {
	id      identity
	expires time.Time
}

const maxCached = 4096

func (a *authenticator) authenticate(ctx context.Context, token, source string) (identity, error) {
	if token == "" {
		return identity{}, fmt.Errorf("%w: no bearer token", ErrUnauthenticated)
	}
	now := a.now()
	if err := checkShape(token, a.audience, now); err != nil {
		return identity{}, err
	}
	key := sha256.Sum256([]byte(token))
	a.mu.Lock()
	if c, ok := a.cache[key]; ok && now.Before(c.expires) {
		a.mu.Unlock()
		return c.id, nil
	}
	if until, ok := a.rejected[key]; ok && now.Before(until) {
		a.mu.Unlock()
		return identity{}, fmt.Errorf("%w: token rejected before", ErrUnauthenticated)
	}
	l := a.sources[source]
	if l == nil {
		if len(a.sources) >= maxSources {
			clear(a.sources)
		}
		l = rate.NewLimiter(sourceRate, sourceBurst)
		a.sources[source] = l
	}
	allowed := l.AllowN(now, 1)
	a.mu.Unlock()
	if !allowed {
		return identity{}, fmt.Errorf("%w: %s asks for too many token reviews", ErrBusy, source)
	}

	select {
	case a.reviews <- struct{}{}:
	default:
		return identity{}, ErrBusy
	}
	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{
		Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{a.audience}},
	}, metav1.CreateOptions{})
	<-a.reviews
	if err != nil {
		return identity{}, fmt.Errorf("report: token review: %w", err)
	}
	st := tr.Status
	if !st.Authenticated {
		msg := st.Error
		if msg == "" {
			msg = "token not authenticated"
		}
		a.reject(key, now)
		return identity{}, fmt.Errorf("%w: %s", ErrUnauthenticated, msg)
	}
	// An authenticated review without audiences means the token is for
	// the API server's own audience, not ours: refuse it too.
	if !contains(st.Audiences, a.audience) {
		return identity{}, fmt.Errorf("%w: token is not for audience %q", ErrUnauthenticated, a.audience)
	}
	parts := strings.Split(st.User.Username, ":")
	if len(parts) != 4 || parts[0] != "system" || parts[1] != "serviceaccount" {
		return identity{}, fmt.Errorf("%w: %q is not a service account", ErrForbidden, st.User.Username)
	}
	pod, uid := first(st.User.Extra[extraPodName]), first(st.User.Extra[extraPodUID])
	if pod == "" || uid == "" {
		return identity{}, fmt.Errorf("%w: the token is not bound to a pod", ErrForbidden)
	}
	id := identity{namespace: parts[2], serviceAccount: parts[3], pod: pod, podUID: types.UID(uid)}

	exp := now.Add(a.ttl)
	if t, ok := tokenExpiry(token); ok && t.Before(exp) {
		exp = t
	}
	a.mu.Lock()
	if len(a.cache) >= maxCached {
		clear(a.cache)
	}
	a.cache[key] = cached{id: id, expires: exp}
	a.mu.Unlock()
	return id, nil
}

// reject remembers a rejected token for rejectFor.
func (a *authenticator) reject(key [32]byte, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.rejected) >= maxCached {
		for k, until := range a.rejected {
			if !now.Before(until) {
				delete(a.rejected, k)
			}
		}
		if len(a.rejected) >= maxCached {
			clear(a.rejected)
		}
	}
	a.rejected[key] = now.Add(rejectFor)
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func first(v authnv1.ExtraValue) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// tokenExpiry reads a JWT's exp claim without verifying it; it only ever
// shortens how long a verified answer is cached.
func tokenExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var c struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(b, &c) != nil || c.Exp == 0 {
		return time.Time{}, false
	}
	return time.Unix(c.Exp, 0), true
}

// member is what authorisation learnt about the reporting pod.
type member struct {
	node string
	// jobUID is the live Job's UID when the job is a batch/v1 Job ("" for
	// a pod group).
	jobUID types.UID
}

// authorize checks that the authenticated pod is a pod of job: in the
// job's namespace, with the same UID as the token's claim, and either
// controlled by the live batch/v1 Job of that name (its controller
// reference carries that Job's UID: a pod of a deleted Job of the same
// name, or with a reference that names the Job by another UID, is not) or,
// when no Job has that name, labelled goodsched.io/group=<name> and
// controlled by no Job.
func authorize(ctx context.Context, cs kubernetes.Interface, id identity, job host.JobKey) (member, error) {
	ns, name, ok := strings.Cut(string(job), "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return member{}, fmt.Errorf("%w: job %q is not namespace/name", ErrBadReport, job)
	}
	if ns != id.namespace {
		return member{}, fmt.Errorf("%w: pod %s/%s may not report for job %s", ErrForbidden, id.namespace, id.pod, job)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, id.pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return member{}, fmt.Errorf("%w: pod %s/%s is gone", ErrUnauthenticated, ns, id.pod)
	}
	if err != nil {
		return member{}, fmt.Errorf("report: get pod: %w", err)
	}
	if pod.UID != id.podUID {
		return member{}, fmt.Errorf("%w: pod %s/%s was replaced", ErrUnauthenticated, ns, id.pod)
	}
	ref := metav1.GetControllerOf(pod)
	isJobRef := ref != nil && ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/")
	var live *batchv1.Job
	err = apierrors.NewNotFound(batchv1.Resource("jobs"), name)
	if len(validation.IsDNS1123Subdomain(name)) == 0 { // else no Job can have the name
		live, err = cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	}
	switch {
	case err == nil:
		// The key is a Job's: only the live Job's own pods report for it
		// (the host never makes a Job's name a pod group either).
		if !isJobRef || ref.Name != name || ref.UID != live.UID {
			return member{}, fmt.Errorf("%w: pod %s/%s is not a pod of the live Job %s (uid %s)", ErrForbidden, ns, id.pod, job, live.UID)
		}
		return member{node: pod.Spec.NodeName, jobUID: live.UID}, nil
	case !apierrors.IsNotFound(err):
		return member{}, fmt.Errorf("report: get job: %w", err)
	}
	if isJobRef {
		// A Job's pod reports for its Job only, whatever labels its
		// template carries.
		return member{}, fmt.Errorf("%w: pod %s/%s belongs to job %s/%s, not %s", ErrForbidden, ns, id.pod, ns, ref.Name, job)
	}
	if pod.Labels[host.LabelGroup] == name {
		return member{node: pod.Spec.NodeName}, nil
	}
	return member{}, fmt.Errorf("%w: pod %s/%s is not a pod of job %s", ErrForbidden, ns, id.pod, job)
}

// NodeType returns the canonical accelerator type of a Node from GPU
// feature discovery's labels, for Config.TypeOf.
type NodeType func(node *corev1.Node) (string, bool)

// GPUTypeOfNode is the NodeType of GPU feature discovery's labels, as the
// host reads them: nvidia.com/gpu.product (and nvidia.com/gpu.memory in
// MiB) through accel.TypeFromProduct; false for a node without the label.
func GPUTypeOfNode(n *corev1.Node) (string, bool) {
	product := n.Labels[host.LabelGPUProduct]
	if product == "" {
		return "", false
	}
	var mem uint64
	if v, err := strconv.ParseUint(n.Labels[host.LabelGPUMemory], 10, 64); err == nil {
		mem = v << 20
	}
	return string(accel.TypeFromProduct(product, mem)), true
}
