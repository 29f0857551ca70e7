package host

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/serving"
)

func sampleService(t *testing.T) *appsv1.Deployment {
	t.Helper()
	data, err := os.ReadFile("../../deploy/sample-service-deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// TestSampleServiceDeployment: deploy/sample-service-deployment.yaml is a
// valid service for the default scheduler name.
func TestSampleServiceDeployment(t *testing.T) {
	d := sampleService(t)
	h := &Host{cfg: Config{SchedulerName: DefaultSchedulerName, Serving: &ServingConfig{MetricsURL: DefaultMetricsURL}}}
	su := h.parseService(d, nil)
	want := serving.Service{Name: "default/llama-chat", Model: "llama-3.1-8b", GPUType: "a100-40gb", GPUsPerReplica: 1,
		SLO: serving.SLO{TTFTP90: time.Second, TPOTP90: 50 * time.Millisecond}, Startup: 3 * time.Minute, MinReplicas: 1, MaxReplicas: 8}
	if su.err != nil || su.svc != want || su.url != "http://{ip}:8000/metrics" || su.spec.preemptible || len(su.spec.types) != 1 {
		t.Errorf("sample: %+v, %v", su, su.err)
	}
	if d.Spec.Template.Spec.SchedulerName != DefaultSchedulerName {
		t.Errorf("the sample's pods name scheduler %q", d.Spec.Template.Spec.SchedulerName)
	}
}

// TestParseServiceErrors: every malformed annotation of a service is named
// at once, wrapped in ErrAnnotation.
func TestParseServiceErrors(t *testing.T) {
	h := &Host{cfg: Config{SchedulerName: DefaultSchedulerName, Serving: &ServingConfig{MetricsURL: DefaultMetricsURL}}}
	for _, c := range []struct {
		name string
		mod  func(d *appsv1.Deployment)
		want []string
	}{
		{"no ttft objective", func(d *appsv1.Deployment) { delete(d.Annotations, AnnotationTTFTP90) }, []string{AnnotationTTFTP90 + " is required"}},
		{"zero tpot objective", func(d *appsv1.Deployment) { d.Annotations[AnnotationTPOTP90] = "0s" }, []string{AnnotationTPOTP90, "positive"}},
		{"bad startup and type", func(d *appsv1.Deployment) {
			d.Annotations[AnnotationStartup] = "soon"
			d.Annotations[AnnotationGPUTypes] = "t44"
		}, []string{AnnotationStartup, "unknown GPU type t44"}},
		{"no GPU", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Resources.Limits = nil }, []string{"asks for no nvidia.com/gpu"}},
		{"max below min", func(d *appsv1.Deployment) { d.Annotations[AnnotationMinReplicas] = "9" }, []string{AnnotationMinReplicas}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := sampleService(t)
			c.mod(d)
			su := h.parseService(d, map[accel.TypeKey]bool{"a100-40gb": true})
			if !errors.Is(su.err, ErrAnnotation) {
				t.Fatalf("err %v, want ErrAnnotation", su.err)
			}
			for _, w := range c.want {
				if !strings.Contains(su.err.Error(), w) {
					t.Errorf("err %q does not name %q", su.err, w)
				}
			}
		})
	}
}
