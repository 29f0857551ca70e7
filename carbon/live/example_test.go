package live_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/carbon/live"
)

// Example chains a live provider with the embedded history and a TTL
// cache. The provider here is a loopback server that fails, as a live
// service sometimes does: the round still gets intensity, from history,
// and the failure is counted.
func Example() {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	}))
	defer down.Close()

	hist, err := live.Embedded(carbon.LifeCycle)
	if err != nil {
		fmt.Println(err)
		return
	}
	em := &live.Counted{Name: "electricitymaps", Base: &live.ElectricityMaps{Token: "key", BaseURL: down.URL}, Timeout: 2 * time.Second}
	last := &live.Counted{Name: "history", Base: hist}
	f := &carbon.Cache{Base: carbon.Fallback{em, last}, TTL: 5 * time.Minute}

	from := time.Date(2026, 12, 7, 14, 0, 0, 0, time.UTC)
	s, err := f.Forecast(context.Background(), "US-CAL-CISO", from, 24*time.Hour)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Len(), "hours from", s.Source, "in", s.Unit)
	fmt.Printf("electricitymaps: %d ok, %d failed; history: %d ok\n", em.Stats().OK, em.Stats().Failed, last.Stats().OK)
	// Output:
	// 24 hours from history(electricitymaps) in gCO2eq/kWh
	// electricitymaps: 0 ok, 1 failed; history: 1 ok
}
