package host

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/goodsched/goodsched/scheduler/topoplace"
)

func topologyCM(data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "goodsched-system", Name: "topo"},
		Data: map[string]string{TopologyConfigKey: data}}
}

const kueueTopology = `apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata:
  name: default
spec:
  levels:
  - nodeLabel: cloud.provider.com/topology-block
  - nodeLabel: cloud.provider.com/topology-rack
  - nodeLabel: kubernetes.io/hostname
`

func TestParseTopologyConfigKueueExample(t *testing.T) {
	c, err := ParseTopologyConfig(topologyCM(kueueTopology))
	if err != nil {
		t.Fatal(err)
	}
	node := func(name, block, rack string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"cloud.provider.com/topology-block": block, "cloud.provider.com/topology-rack": rack, corev1.LabelHostname: name}}}
	}
	top, err := c.Build([]*corev1.Node{node("a", "b1", "r1"), node("b", "b1", "r1"), node("c", "b1", "r2"), node("d", "b2", "r1")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		nodes []string
		tier  int
	}{{[]string{"a"}, 0}, {[]string{"a", "b"}, 2}, {[]string{"a", "c"}, 3}, {[]string{"a", "d"}, 4}} {
		if got, err := top.TierOf(tc.nodes); err != nil || got != tc.tier {
			t.Errorf("TierOf(%v) = %d, %v; want %d", tc.nodes, got, err, tc.tier)
		}
	}
}

func TestParseTopologyConfigRejects(t *testing.T) {
	many := "spec:\n  levels:\n"
	for i := range 17 {
		many += fmt.Sprintf("  - nodeLabel: example.com/l%d\n", i)
	}
	for name, data := range map[string]string{
		"bad yaml":      "spec: [",
		"unknown field": "spec:\n  levels:\n  - nodeLabel: a\n    bandwidth: 3\n",
		"wrong kind":    "kind: ResourceFlavor\nspec:\n  levels:\n  - nodeLabel: a\n",
		"no levels":     "spec: {}\n",
		"17 levels":     many,
		"bad label":     "spec:\n  levels:\n  - nodeLabel: Not A Label!\n",
		"duplicate":     "spec:\n  levels:\n  - nodeLabel: a\n  - nodeLabel: a\n",
		"hostname":      "spec:\n  levels:\n  - nodeLabel: kubernetes.io/hostname\n  - nodeLabel: a\n",
	} {
		_, err := ParseTopologyConfig(topologyCM(data))
		if !errors.Is(err, ErrTopologyConfig) || !strings.Contains(err.Error(), "goodsched-system/topo") {
			t.Errorf("%s: %v, want ErrTopologyConfig naming the ConfigMap", name, err)
		}
	}
	cm := topologyCM("")
	delete(cm.Data, TopologyConfigKey)
	if _, err := ParseTopologyConfig(cm); !errors.Is(err, ErrTopologyConfig) {
		t.Errorf("no key: %v", err)
	}
}

func TestTopologyConstraint(t *testing.T) {
	c, err := ParseTopologyConfig(topologyCM(kueueTopology))
	if err != nil {
		t.Fatal(err)
	}
	top, err := c.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	const block, rack = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"
	got, err := TopologyConstraint(map[string]string{AnnotationTopologyRequired: block, AnnotationTopologyPreferred: " " + rack}, top, 2)
	want := topoplace.Constraint{Required: block, Preferred: rack, Slices: []topoplace.Slice{{Level: topoplace.NodeLevel, Size: 2}}}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	if got, err := TopologyConstraint(nil, top, 1); err != nil || fmt.Sprint(got) != fmt.Sprint(topoplace.Constraint{}) {
		t.Errorf("no annotations: %+v, %v", got, err)
	}
	want = topoplace.Constraint{Slices: []topoplace.Slice{{Level: topoplace.NodeLevel, Size: 4}}}
	if got, err := TopologyConstraint(nil, top, 4); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("no annotations, pods of 4 GPUs: %+v, %v; want %+v", got, err, want)
	}
	for name, ann := range map[string]map[string]string{
		"unknown level":     {AnnotationTopologyRequired: "cloud.provider.com/topology-zone"},
		"empty":             {AnnotationTopologyPreferred: ""},
		"preferred outside": {AnnotationTopologyRequired: rack, AnnotationTopologyPreferred: block},
	} {
		_, err := TopologyConstraint(ann, top, 1)
		if !errors.Is(err, ErrAnnotation) || !strings.Contains(err.Error(), "goodsched.io/topology-") {
			t.Errorf("%s: %v, want ErrAnnotation naming the annotation", name, err)
		}
	}
}
