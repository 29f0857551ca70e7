package host

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

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
// a random key when it does not exist.
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
			return key, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("host: binding key: get Secret %s/%s: %w", h.cfg.LeaseNamespace, DefaultBindingKeySecret, err)
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("host: binding key: %w", err)
		}
		_, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: DefaultBindingKeySecret, Namespace: h.cfg.LeaseNamespace},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{BindingKeySecretKey: key},
		}, metav1.CreateOptions{})
		if err == nil {
			return key, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("host: binding key: create Secret %s/%s: %w", h.cfg.LeaseNamespace, DefaultBindingKeySecret, err)
		}
	}
	return nil, fmt.Errorf("host: binding key: Secret %s/%s keeps changing", h.cfg.LeaseNamespace, DefaultBindingKeySecret)
}
