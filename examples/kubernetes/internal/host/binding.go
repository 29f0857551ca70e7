package host

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultBindingKeySecret names the Secret, in Config.LeaseNamespace, that
// holds the binding key when Config.BindingKey is nil; its data key is
// BindingKeySecretKey. The host creates it with a random key on first
// start, so every replica and every later leader verifies the bindings of
// the ones before.
const (
	DefaultBindingKeySecret = "goodsched-binding-key"
	BindingKeySecretKey     = "key"
	// MinBindingKeyBytes is the shortest binding key accepted.
	MinBindingKeyBytes = 16
	// AnnotationAdoptBindings, on the binding-key Secret, is "pending"
	// from the Secret's creation by a host until that host has signed
	// the bindings made before it (see adoptBindings); then it records
	// when and how many.
	AnnotationAdoptBindings = "goodsched.io/adopt-bindings"
)

// bindingMAC is AnnotationBinding's value for a pod bound to devices on
// node: 128 bits of HMAC-SHA256 under key, base64url.
func bindingMAC(key []byte, uid types.UID, node, devices string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("goodsched.io/binding/v1\x00"))
	m.Write([]byte(uid))
	m.Write([]byte{0})
	m.Write([]byte(node))
	m.Write([]byte{0})
	m.Write([]byte(devices))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// verifyBinding reports whether the pod's AnnotationBinding is the MAC of
// its UID, node and AnnotationDevices under key.
func verifyBinding(key []byte, p *corev1.Pod) bool {
	got, ok := p.Annotations[AnnotationBinding]
	if !ok || len(key) == 0 || len(got) > 64 {
		return false
	}
	want := bindingMAC(key, p.UID, p.Spec.NodeName, p.Annotations[AnnotationDevices])
	return hmac.Equal([]byte(got), []byte(want))
}

// loadBindingKey returns Config.BindingKey, or the key in the Secret
// DefaultBindingKeySecret of the lease namespace, creating that Secret with
// a random key when it does not exist; then it adopts the bindings made
// before the Secret when the Secret asks for it.
func (h *Host) loadBindingKey(ctx context.Context) ([]byte, error) {
	if h.cfg.BindingKey != nil {
		return h.cfg.BindingKey, nil
	}
	secrets := h.cfg.Client.CoreV1().Secrets(h.cfg.LeaseNamespace)
	for range 3 {
		s, err := secrets.Get(ctx, DefaultBindingKeySecret, metav1.GetOptions{})
		if err == nil {
			key := s.Data[BindingKeySecretKey]
			if len(key) < MinBindingKeyBytes {
				return nil, fmt.Errorf("%w: Secret %s/%s: key %q has %d bytes, want at least %d", ErrConfig, h.cfg.LeaseNamespace, DefaultBindingKeySecret, BindingKeySecretKey, len(key), MinBindingKeyBytes)
			}
			if s.Annotations[AnnotationAdoptBindings] == "pending" {
				if err := h.adoptBindings(ctx, key, s); err != nil {
					return nil, err
				}
			}
			return key, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("host: binding key: get Secret %s/%s: %w", h.cfg.LeaseNamespace, DefaultBindingKeySecret, err)
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("host: binding key: %w", err)
		}
		created, err := secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: DefaultBindingKeySecret, Namespace: h.cfg.LeaseNamespace,
				Annotations: map[string]string{AnnotationAdoptBindings: "pending"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{BindingKeySecretKey: key},
		}, metav1.CreateOptions{})
		if err == nil {
			if err := h.adoptBindings(ctx, key, created); err != nil {
				return nil, err
			}
			return key, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("host: binding key: create Secret %s/%s: %w", h.cfg.LeaseNamespace, DefaultBindingKeySecret, err)
		}
	}
	return nil, fmt.Errorf("host: binding key: Secret %s/%s keeps changing", h.cfg.LeaseNamespace, DefaultBindingKeySecret)
}

// adoptBindings signs the bindings a goodsched without binding keys made:
// the bound pods of this scheduler (in Config.Namespace when set) created
// before the binding-key Secret, with AnnotationDevices and no
// AnnotationBinding, get their AnnotationBinding through pods/status (the
// only pod write the host's RBAC allows), so that an upgrade does not
// evict every running job as unverified. It runs when the Secret says
// "pending" — that is, once, by the host that created the Secret, or again
// by the next one when that host stopped half-way — and then records the
// count on the Secret. Pods created after the Secret (timestamps have
// whole seconds: after its second) are never adopted: a tenant cannot get
// a forged binding signed later. A cluster admin who
// wants no adoption at all creates the Secret before upgrading (then
// bindings made before it are evicted and re-placed once).
func (h *Host) adoptBindings(ctx context.Context, key []byte, secret *corev1.Secret) error {
	pods := h.cfg.Client.CoreV1().Pods(h.cfg.Namespace)
	before := secret.CreationTimestamp.Time
	adopted, cont := 0, ""
	for {
		l, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.schedulerName=" + h.cfg.SchedulerName, Limit: 500, Continue: cont})
		if err != nil {
			return fmt.Errorf("host: adopt bindings: list pods: %w", err)
		}
		for i := range l.Items {
			p := &l.Items[i]
			devs, ok := p.Annotations[AnnotationDevices]
			if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || !ok || p.Annotations[AnnotationBinding] != "" ||
				p.CreationTimestamp.Time.After(before) {
				continue
			}
			// The UID in the patch is a precondition: a pod re-created
			// under the same name is not signed.
			body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": p.UID,
				"annotations": map[string]string{AnnotationBinding: bindingMAC(key, p.UID, p.Spec.NodeName, devs)}}})
			if err != nil {
				return fmt.Errorf("host: adopt bindings: %w", err)
			}
			_, err = h.cfg.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
			switch {
			case err == nil:
				adopted++
			case apierrors.IsNotFound(err), apierrors.IsConflict(err):
				// gone, or another pod now: nothing to adopt
			default:
				return fmt.Errorf("host: adopt bindings: sign pod %s/%s: %w", p.Namespace, p.Name, err)
			}
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	done := fmt.Sprintf("done %s: %d pods", time.Now().UTC().Format(time.RFC3339), adopted)
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationAdoptBindings: done}}})
	if err != nil {
		return fmt.Errorf("host: adopt bindings: %w", err)
	}
	if _, err := h.cfg.Client.CoreV1().Secrets(secret.Namespace).Patch(ctx, secret.Name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("host: adopt bindings: mark Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	if adopted > 0 {
		h.log.Info("adopted the bindings made before the binding key", "pods", adopted)
	}
	return nil
}
