package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/report"
)

// reportFlags configure the measurement loop's HTTPS report endpoint
// (issue 15: examples/kubernetes/internal/report), served on a port and
// Service of its own beside /metrics.
type reportFlags struct {
	addr, cert, key string
	perType         bool
	rate            float64
	burst           int
}

// register adds the report endpoint's flags to fs.
func (f *reportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "report-addr", "", "address of the HTTPS report endpoint of the measurement loop (empty = off)")
	fs.StringVar(&f.cert, "tls-cert", "", "TLS certificate file of the report endpoint (a mounted Secret's tls.crt)")
	fs.StringVar(&f.key, "tls-key", "", "TLS key file of the report endpoint (a mounted Secret's tls.key)")
	fs.BoolVar(&f.perType, "report-per-type", true, "keep one goodput model per GPU type (from the reporting pod's node labels); false = one type-agnostic model per job")
	fs.Float64Var(&f.rate, "report-rate", 1, "reports per second allowed per job")
	fs.IntVar(&f.burst, "report-burst", 20, "burst of reports allowed per job")
}

// setup returns the ModelSource the host consults (nil = none) and a
// function that serves the report endpoint until ctx is done (nil = no
// endpoint). It runs before the host is built.
func (f *reportFlags) setup(ctx context.Context, cs kubernetes.Interface, log *slog.Logger) (models host.ModelSource, serve func(context.Context, *host.Host) error, err error) {
	if f.addr == "" {
		return nil, nil, nil
	}
	if f.cert == "" || f.key == "" {
		return nil, nil, errors.New("-report-addr needs -tls-cert and -tls-key")
	}
	// Only the leader's answers carry the current plan; the host exists
	// once serve is called.
	var leader atomic.Pointer[host.Host]
	cfg := report.Config{Client: cs, Rate: rate.Limit(f.rate), Burst: f.burst, Logger: log,
		Leader: func() bool { h := leader.Load(); return h != nil && h.IsLeader() },
		JobUID: func(job host.JobKey) (types.UID, bool) {
			if h := leader.Load(); h != nil {
				return h.JobUID(job)
			}
			return "", false
		},
		Steps: func(job host.JobKey, steps []host.StepTime) error {
			if h := leader.Load(); h != nil {
				return h.ObserveSteps(job, steps)
			}
			return nil
		}}
	if f.perType {
		cfg.TypeOf = report.GPUTypeOfNode
	}
	srv, err := report.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := srv.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("report endpoint: %w", err)
	}
	return srv, func(ctx context.Context, h *host.Host) error {
		leader.Store(h)
		go pruneStates(ctx, srv, h, log)
		return srv.ServeTLS(ctx, f.addr, f.cert, f.key)
	}, nil
}

// pruneStates deletes, every 10 minutes while this replica leads, the
// report states of Jobs and pod groups that are gone (the states live in
// the scheduler's namespace, where no owner reference can reach).
func pruneStates(ctx context.Context, srv *report.Server, h *host.Host, log *slog.Logger) {
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	live := func(job host.JobKey, uid types.UID) bool {
		if uid == "" { // a pod group: alive while it has live pods
			return len(h.PodsOfJob(job)) > 0
		}
		got, ok := h.JobUID(job)
		return ok && got == uid
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !h.IsLeader() {
			continue
		}
		if n, err := srv.PruneStates(ctx, live, 10*time.Minute); err != nil {
			log.Warn("report: prune states", "err", err)
		} else if n > 0 {
			log.Info("report: pruned the states of deleted Jobs and pod groups", "deleted", n)
		}
	}
}
