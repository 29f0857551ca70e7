package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/goodsched/goodsched/examples/kubernetes/client"
)

// Example serves one report from a pod of Job ml/a (its token checked by
// a TokenReview, here answered by a fake clientset) and one forged by a
// pod of another Job. The accepted report is stored before it is
// acknowledged, and the job becomes adaptive with one observation.
func Example() {
	cs := fake.NewClientset(jobPod("ml", "a-0", "a", "uid-a0"), jobPod("ml", "b-0", "b", "uid-b0"), fakeJob("ml", "a"), fakeJob("ml", "b"))
	fakeTokens(cs, "ml", map[string]types.UID{"a-0": "uid-a0", "b-0": "uid-b0"})
	s, err := New(Config{Client: cs})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	post := func(token string) (int, client.Response) {
		body, _ := json.Marshal(report("ml/a"))
		req := httptest.NewRequest(http.MethodPost, client.Path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+fakeJWT(token))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		var resp client.Response
		_ = json.Unmarshal(rec.Body.Bytes(), &resp)
		return rec.Code, resp
	}
	code, resp := post("tok-a-0")
	fmt.Println("own pod:", code, "adaptive:", resp.Adaptive, "observations:", resp.Observations)
	code, _ = post("tok-b-0")
	fmt.Println("another job's pod:", code)
	_, err = cs.CoreV1().ConfigMaps(DefaultStateNamespace).Get(ctx, StateName("ml/a", "job-a"), metav1.GetOptions{})
	fmt.Println("state stored:", err == nil)
	// Output:
	// own pod: 200 adaptive: true observations: 1
	// another job's pod: 403
	// state stored: true
}
