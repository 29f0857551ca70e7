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

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
// answers for a short time (never past the token's own expiry).
type authenticator struct {
	client   kubernetes.Interface
	audience string
	ttl      time.Duration
	now      func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]cached
}

type cached struct {
	id      identity
	expires time.Time
}

const maxCached = 4096

func (a *authenticator) authenticate(ctx context.Context, token string) (identity, error) {
	if token == "" {
		return identity{}, fmt.Errorf("%w: no bearer token", ErrUnauthenticated)
	}
	key := sha256.Sum256([]byte(token))
	now := a.now()
	a.mu.Lock()
	if c, ok := a.cache[key]; ok && now.Before(c.expires) {
		a.mu.Unlock()
		return c.id, nil
	}
	a.mu.Unlock()

	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{
		Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{a.audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		return identity{}, fmt.Errorf("report: token review: %w", err)
	}
	st := tr.Status
	if !st.Authenticated {
		msg := st.Error
		if msg == "" {
			msg = "token not authenticated"
		}
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
	node  string
	owner *metav1.OwnerReference // the Job, when the job is a batch/v1 Job
}

// authorize checks that the authenticated pod is a pod of job: in the
// job's namespace, with the same UID as the token's claim, and either
// controlled by the batch/v1 Job of that name or labelled
// goodsched.io/group=<name>.
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
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/") {
		// A Job's pod reports for its Job only, whatever labels its
		// template carries (the host never makes a Job's pod a group
		// member either).
		if ref.Name != name {
			return member{}, fmt.Errorf("%w: pod %s/%s belongs to job %s/%s, not %s", ErrForbidden, ns, id.pod, ns, ref.Name, job)
		}
		r := *ref
		r.Controller, r.BlockOwnerDeletion = nil, nil
		return member{node: pod.Spec.NodeName, owner: &r}, nil
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
