package main

import (
	"context"
	"flag"

	"k8s.io/client-go/kubernetes"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
)

// reportFlags configure the measurement loop's HTTPS report endpoint
// (issue 15: examples/kubernetes/internal/report), served on a port and
// Service of its own beside /metrics.
//
// TODO(issue 15): the measurement loop fills register and setup in: the
// -report-addr, -tls-cert and -tls-key flags, a ModelSource for the host,
// and the endpoint's server. Until then the scheduler runs without
// measured models.
type reportFlags struct {
	addr, cert, key string
}

// register adds the report endpoint's flags to fs.
func (f *reportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "report-addr", "", "address of the HTTPS report endpoint of the measurement loop (empty = off)")
	fs.StringVar(&f.cert, "tls-cert", "", "TLS certificate file of the report endpoint")
	fs.StringVar(&f.key, "tls-key", "", "TLS key file of the report endpoint")
}

// setup returns the ModelSource the host consults (nil = none) and a
// function that serves the report endpoint until ctx is done (nil = no
// endpoint). It runs before the host is built; serve gets the host (for
// JobOfPod / PodsOfJob).
func (f *reportFlags) setup(ctx context.Context, cs kubernetes.Interface) (models host.ModelSource, serve func(context.Context, *host.Host) error, err error) {
	_, _ = ctx, cs
	return nil, nil, nil
}
