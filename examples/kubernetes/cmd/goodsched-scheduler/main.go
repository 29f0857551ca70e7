// Command goodsched-scheduler schedules GPU Jobs on a Kubernetes cluster
// with goodsched: it watches Nodes, Pods and batch/v1 Jobs, and every
// round binds, evicts and resizes the Jobs whose pods name it
// (schedulerName: goodsched), as examples/kubernetes/README.md describes.
//
// Usage:
//
//	goodsched-scheduler [-kubeconfig FILE] [-policy goodput] [-parallel=true] [-interval 10s] [-leader-elect=true] [-metrics-addr :8080] ...
//
// In a cluster it uses its ServiceAccount (deploy/ has the manifests).
// /metrics and /healthz are served on -metrics-addr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/carbonaware"
	"github.com/goodsched/goodsched/scheduler/easyscale"
	"github.com/goodsched/goodsched/variability"
)

// policies are the policies -policy names.
func policies() map[string]scheduler.Policy {
	return map[string]scheduler.Policy{
		"goodput":        scheduler.Pollux{},
		"fifo":           baselines.FIFO{},
		"tiresias":       baselines.Tiresias{},
		"optimus":        baselines.Optimus{},
		"easyscale":      easyscale.Policy{},
		"easyscale-homo": easyscale.Policy{Homogeneous: true},
		"goodput-mix":    easyscale.Mix{Policy: scheduler.Pollux{}},
		// Delay-tolerant jobs with a deadline (goodsched.io/delay-tolerant,
		// goodsched.io/deadline, goodsched.io/work) run in the forecast's
		// clean hours (-carbon-zone); carbon only, as CarbonScaler.
		"goodput-carbon": carbonaware.Policy{CarbonWeight: 1},
	}
}

// policyFor returns the policy -policy names, with -parallel applied.
func policyFor(name string, parallel bool) (scheduler.Policy, error) {
	pol, ok := policies()[name]
	if !ok {
		names := slices.Sorted(maps.Keys(policies()))
		return nil, fmt.Errorf("-policy %q: want one of %s", name, strings.Join(names, ", "))
	}
	switch p := pol.(type) {
	case scheduler.Pollux:
		p.Parallel = parallel
		pol = p
	case carbonaware.Policy:
		p.Inner = scheduler.Pollux{Parallel: parallel}
		pol = p
	case easyscale.Mix:
		if g, ok := p.Policy.(scheduler.Pollux); ok {
			g.Parallel = parallel
			p.Policy = g
		}
		pol = p
	}
	return pol, nil
}

func main() {
	err := run(os.Args[1:], os.Stderr)
	code := exitCode(err)
	if code != 0 {
		fmt.Fprintln(os.Stderr, "goodsched-scheduler:", err)
	}
	os.Exit(code)
}

// exitCode is the exit status for run's error: 0 for none and for -h
// (asking for help is not a failure), 2 for a bad command line, 1 else.
func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	return 1
}

// errUsage marks a bad command line: exit status 2, one line on stderr.
var errUsage = errors.New("usage")

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("goodsched-scheduler", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a bad flag is reported in one line by main
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file; empty = in-cluster configuration")
	schedName := fs.String("scheduler-name", host.DefaultSchedulerName, "spec.schedulerName of the pods to schedule")
	namespace := fs.String("namespace", "", "schedule only the Jobs and pods of this namespace (empty = all)")
	interval := fs.Duration("interval", host.DefaultInterval, "time between rounds when nothing happens")
	minInterval := fs.Duration("min-interval", host.DefaultMinInterval, "least time between event-triggered rounds")
	names := slices.Sorted(maps.Keys(policies()))
	policy := fs.String("policy", "goodput", "scheduling policy: "+strings.Join(names, ", "))
	parallel := fs.Bool("parallel", true, "goodput policy: search a round's starts on two goroutines when GOMAXPROCS > 1 (the same plans in less time on large rounds); other policies ignore it")
	leaderElect := fs.Bool("leader-elect", true, "campaign for a Lease; only the leader schedules")
	leaseNS := fs.String("lease-namespace", host.DefaultLeaseNamespace, "namespace of the leader-election Lease")
	leaseName := fs.String("lease-name", host.DefaultLeaseName, "name of the leader-election Lease")
	identity := fs.String("identity", os.Getenv("POD_NAME"), "identity in the Lease (empty = host name)")
	metricsAddr := fs.String("metrics-addr", ":8080", "address of /metrics and /healthz")
	qps := fs.Float64("kube-api-qps", 500, "API requests per second (client-side limit; a round writes about 1.5 per pod it binds)")
	burst := fs.Int("kube-api-burst", 2000, "API request burst (a round that binds more pods than this is slowed to -kube-api-qps)")
	workers := fs.Int("bind-workers", host.DefaultBindWorkers, "API writes a round makes at once")
	tolerated := fs.String("tolerated-taints", host.ResourceGPU, "comma-separated taint keys whose NoSchedule taints do not hide GPU nodes")
	servingOn := fs.Bool("serving", false, "scale the Deployments annotated "+host.AnnotationService+" from their pods' vLLM metrics and give their replicas GPUs before training (needs deploy/rbac.yaml's deployments rules)")
	servingURL := fs.String("serving-metrics-url", host.DefaultMetricsURL, "with -serving: a service pod's metrics URL ({ip}, {pod}, {namespace} are replaced); "+host.AnnotationMetricsURL+" overrides it per Deployment")
	queuesCM := fs.String("queues-configmap", "", "namespace/name of the ConfigMap with the tenants' queues and quotas (key "+host.QueuesConfigKey+"; empty = no queues)")
	topologyCM := fs.String("topology-configmap", "", "namespace/name of the ConfigMap with the network tiers as node-label levels (key "+host.TopologyConfigKey+", a Kueue Topology; empty = no topology)")
	varEstimate := fs.Bool("variability-estimate", false, "learn each GPU's slowdown from the step times jobs send to the report endpoint (-report-addr), place by it and export goodsched_device_slowdown{node,gpu}")
	varPenalty := fs.Float64("variability-locality-penalty", 1, "with -variability-estimate: how many times longer a gang's steps take when it spans nodes (≥ 1)")
	var rep reportFlags
	rep.register(fs)
	var cf carbonFlags
	cf.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, "usage: goodsched-scheduler [flags]\n\n"+
				"goodsched-scheduler schedules the GPU Jobs whose pods name it (schedulerName:\n"+
				"goodsched) with goodsched's policies; examples/kubernetes/README.md has the rest.\n\nflags:\n")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return err
		}
		return fmt.Errorf("%w: %v (see -h)", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q (see -h)", errUsage, fs.Arg(0))
	}
	pol, err := policyFor(*policy, *parallel)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}

	forecaster, err := cf.forecaster()
	if err != nil {
		return err
	}
	var cfg *rest.Config
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cs, reportCS, err := newClients(cfg, float32(*qps), *burst)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, nil))

	models, serveReport, err := rep.setup(ctx, reportCS, log)
	if err != nil {
		return err
	}
	var taints []string
	for _, t := range strings.Split(*tolerated, ",") {
		if t = strings.TrimSpace(t); t != "" {
			taints = append(taints, t)
		}
	}
	var servingCfg *host.ServingConfig
	if *servingOn {
		servingCfg = &host.ServingConfig{MetricsURL: *servingURL}
	}
	var varOpts *variability.Options
	if *varEstimate {
		varOpts = &variability.Options{LocalityPenalty: *varPenalty}
	}
	h, err := host.New(host.Config{
		Client: cs, SchedulerName: *schedName, Namespace: *namespace,
		Interval: *interval, MinInterval: *minInterval,
		Scheduler: scheduler.Config{Policy: pol}, Models: models,
		Identity: *identity, LeaderElection: *leaderElect, LeaseNamespace: *leaseNS, LeaseName: *leaseName,
		BindWorkers: *workers, ToleratedTaints: taints, Logger: log, QueuesConfigMap: *queuesCM,
		Carbon: forecaster, CarbonZone: cf.zone, Serving: servingCfg, TopologyConfigMap: *topologyCM,
		Variability: varOpts,
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", *metricsAddr)
	if err != nil {
		return fmt.Errorf("-metrics-addr: %w", err)
	}
	srv := metricsServer(h.Handler())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
			stop()
		}
	}()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if serveReport != nil {
		go func() {
			if err := serveReport(ctx, h); err != nil {
				log.Error("report endpoint", "err", err)
				stop()
			}
		}()
	}
	log.Info("starting", "scheduler", *schedName, "policy", *policy, "leader-elect", *leaderElect, "metrics", ln.Addr().String())
	return h.Run(ctx)
}

// Client-side limits of the report endpoint's own client: TokenReviews,
// pod, Job and Node reads, state writes. The endpoint never spends the
// scheduler's budget (-kube-api-qps), so a flood of reports cannot slow
// binds or lease renewals.
const (
	reportQPS   = 20
	reportBurst = 50
)

// newClients returns the clientset of the scheduler's own API calls (with
// the -kube-api-qps and -kube-api-burst client-side limits) and the one
// the report endpoint uses: its own rate limiter and its own connections
// (a Dial of its own keeps client-go from sharing the scheduler's cached
// transport), so that neither its requests nor their HTTP/2 streams queue
// the scheduler's.
func newClients(cfg *rest.Config, qps float32, burst int) (sched, report kubernetes.Interface, err error) {
	sc := rest.CopyConfig(cfg)
	sc.QPS, sc.Burst = qps, burst
	sc.UserAgent = "goodsched-scheduler"
	cs, err := kubernetes.NewForConfig(sc)
	if err != nil {
		return nil, nil, err
	}
	rc := rest.CopyConfig(cfg)
	rc.QPS, rc.Burst = reportQPS, reportBurst
	rc.UserAgent = "goodsched-scheduler/report"
	rc.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	rs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	return cs, rs, nil
}

// metricsServer serves /metrics and /healthz, with timeouts on every phase
// and on idle connections.
func metricsServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 90 * time.Second, MaxHeaderBytes: 16 << 10}
}
