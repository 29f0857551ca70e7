// Package report is the scheduler side of goodsched's measurement loop: an
// HTTPS endpoint where the pods of a job report their measured step times
// and gradient statistics, and the host.ModelSource that turns those
// measurements into each job's goodput models.
//
// Each report is authenticated with the pod's projected ServiceAccount
// token (audience "goodsched") through the TokenReview API; the token's
// pod-name claim must name a pod of the job the report is for (controlled by
// the live batch/v1 Job of that name, by UID, or, when no Job has that
// name, labelled goodsched.io/group=<name>). Missing, expired or invalid
// tokens get 401; a pod reporting for another job gets 403; nothing is
// written for either. Tokens not shaped like a projected token for our
// audience are refused before any TokenReview, rejected tokens are
// remembered, and TokenReviews are limited per source and in flight (429),
// so that junk cannot spend the API budget. Request bodies are bounded
// (client.MaxRequestBytes, 413) and each job's reports are rate limited
// (429).
//
// A job's measurements are aggregated per (GPU type, nodes, replicas, local
// batch, accumulation steps) as sums and counts in one ConfigMap per job in
// Config.StateNamespace (StateName: by the Job's UID, or a hash of a pod
// group's key; labelled goodsched.io/report=state), written before the
// report is acknowledged: nothing acknowledged is lost, and a restarted
// scheduler, or a new leader, watches the same ConfigMaps and refits
// exactly the same models (a model is fitted from a fresh
// goodput.Estimator fed the stored state alone). PruneStates deletes the
// states of Jobs that are gone.
//
// Host contract, in steps:
//  1. New(Config) with a clientset; Start(ctx) runs the ConfigMap watch and
//     returns once it has synced.
//  2. Serve the endpoint with ServeTLS (certificate files from a mounted
//     Secret, re-read when they change) or mount Server as an http.Handler.
//  3. Pass the Server as host.Config's ModelSource: each round the host asks
//     Speedup per job and calls Publish with the decision, which the next
//     report's response carries back, and PublishRound with the whole
//     round, from which a job that asks at a synchronisation point
//     (client.Report.Reconfigure) is told to expand, shrink or keep its
//     size (DMR, package scheduler/dmr).
package report

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/goodsched/goodsched/examples/kubernetes/client"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/dmr"
)

// Config configures New. Only Client is required.
type Config struct {
	// Client talks to the API server: TokenReviews (create), Pods and Jobs
	// (get), ConfigMaps of StateNamespace (get, list, watch, create,
	// update, delete) and, with TypeOf, Nodes (get). Give it a client of
	// its own (its own rate limit and connections), so that reports never
	// spend the scheduler's API budget.
	Client kubernetes.Interface
	// Audience is the token audience required; "" = Audience.
	Audience string
	// TypeOf maps the reporting pod's Node to its canonical accelerator
	// type, so that measurements are kept per GPU type; nil keeps one
	// type-agnostic model per job (goodput.AnyType), as the simulator's
	// default does.
	TypeOf NodeType
	// Rate and Burst limit each job's reports; 0 = 1 report/s and a burst
	// of 20 (AdaptDL reports every 30 s).
	Rate  rate.Limit
	Burst int
	// TokenCacheTTL is how long a reviewed token is trusted without a new
	// TokenReview (never past its expiry); 0 = 30 s, negative = no cache.
	TokenCacheTTL time.Duration
	// MaxReplicas caps every job's exploration bound (0 = 64, as the
	// simulator); Explore and Fit configure its Estimator (see
	// goodput.EstimatorConfig).
	MaxReplicas int
	Explore     int
	Fit         goodput.FitOptions
	// Logger, if set, receives one line per refused report.
	Logger *slog.Logger
	// Now is the clock of the token cache and rate limiter; nil = time.Now.
	Now func() time.Time
	// StateNamespace is where the state ConfigMaps live; "" =
	// DefaultStateNamespace, the scheduler's own namespace, so that the
	// scheduler reads and writes no ConfigMap of a training namespace.
	StateNamespace string
	// JobUID, if set, returns the UID of the live batch/v1 Job of a job key
	// (host.Host.JobUID): a state stored for another UID (a deleted Job of
	// the same name) is then not used. nil = every state is used.
	JobUID func(host.JobKey) (types.UID, bool)
	// Leader, if set, says whether this replica leads (host.Host.IsLeader).
	// Only the leader runs rounds, so only its answers carry the current
	// plan: the others refuse every report with 503 and Retry-After before
	// anything is written, and clients retry on a new connection (the
	// Service then reaches another replica). nil = always answer, for a
	// single replica.
	Leader func() bool
	// Steps, if set, receives the step times of every report the endpoint
	// accepted and stored (host.Host.ObserveSteps: per-device slowdown
	// estimation); each is the mean optimizer step plus its accumulation
	// passes. nil = none.
	Steps func(job host.JobKey, steps []host.StepTime) error
}

// Server is the report endpoint and the ModelSource built on it. It is
// safe for concurrent use.
type Server struct {
	cfg    Config
	auth   *authenticator
	models *models

	mu       sync.Mutex
	limiters map[host.JobKey]*rate.Limiter
	// advisor answers reconfiguration requests (PublishRound; nil before
	// the first round).
	advisor  atomic.Pointer[dmr.Advisor]
	nodeType map[string]string

	factory informers.SharedInformerFactory
	cms     cache.SharedIndexInformer

	logLimit   *rate.Limiter // refusal log lines
	suppressed atomic.Int64  // refusals not logged since the last line
}

var (
	_ host.ModelSource = (*Server)(nil)
	_ host.PriorSource = (*Server)(nil)
)

// New validates cfg and returns a Server; call Start before serving.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil {
		return nil, errors.New("report: Config.Client is nil")
	}
	if cfg.Audience == "" {
		cfg.Audience = Audience
	}
	if cfg.Rate < 0 || cfg.Burst < 0 || cfg.MaxReplicas < 0 || cfg.Explore < 0 {
		return nil, errors.New("report: negative Config.Rate, Burst, MaxReplicas or Explore")
	}
	if cfg.Rate == 0 {
		cfg.Rate = 1
	}
	if cfg.Burst == 0 {
		cfg.Burst = 20
	}
	if cfg.TokenCacheTTL == 0 {
		cfg.TokenCacheTTL = 30 * time.Second
	}
	if cfg.MaxReplicas == 0 {
		cfg.MaxReplicas = 64
	}
	if err := cfg.Fit.Validate(); err != nil {
		return nil, fmt.Errorf("report: Config.Fit: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.StateNamespace == "" {
		cfg.StateNamespace = DefaultStateNamespace
	}
	ttl := max(cfg.TokenCacheTTL, 0)
	s := &Server{
		cfg: cfg,
		auth: &authenticator{client: cfg.Client, audience: cfg.Audience, ttl: ttl, now: cfg.Now, cache: map[[32]byte]cached{},
			rejected: map[[32]byte]time.Time{}, sources: map[string]*rate.Limiter{}, reviews: make(chan struct{}, maxReviews)},
		models:   newModels(cfg),
		limiters: map[host.JobKey]*rate.Limiter{},
		nodeType: map[string]string{},
		logLimit: rate.NewLimiter(5, 20),
	}
	s.factory = informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informers.WithNamespace(cfg.StateNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = StateLabel + "=" + StateLabelValue }))
	s.cms = s.factory.Core().V1().ConfigMaps().Informer()
	_, err := s.cms.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.observeCM(o) },
		UpdateFunc: func(_, o any) { s.observeCM(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if cm, ok := o.(*corev1.ConfigMap); ok {
				if job := cm.Annotations[JobAnnotation]; job != "" {
					s.models.forget(host.JobKey(job))
				}
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return s, nil
}

// Start runs the watch of the state ConfigMaps until ctx is done and
// returns once the existing ones are loaded.
func (s *Server) Start(ctx context.Context) error {
	s.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.cms.HasSynced) {
		return fmt.Errorf("report: state ConfigMaps did not sync: %w", context.Cause(ctx))
	}
	return nil
}

func (s *Server) observeCM(o any) {
	cm, ok := o.(*corev1.ConfigMap)
	if !ok {
		return
	}
	job := cm.Annotations[JobAnnotation]
	if job == "" {
		return
	}
	uid := types.UID(cm.Annotations[JobUIDAnnotation])
	if cm.Namespace != s.cfg.StateNamespace || StateName(job, uid) != cm.Name {
		return // not where this job's state lives: ignore
	}
	st, err := decodeState(cm.Data[StateKey])
	if err != nil {
		s.cfg.Logger.Warn("report: undecodable state", "configmap", cm.Namespace+"/"+cm.Name, "err", err)
		return
	}
	st.UID = string(uid)
	s.models.put(host.JobKey(job), parseRV(cm.ResourceVersion), st)
}

// Speedup implements host.ModelSource: the job's fitted goodput curve
// (a *goodput.Curve) once it has reported a measured configuration.
func (s *Server) Speedup(job host.JobKey) (goodput.Speedup, bool) { return s.models.Speedup(job) }

// Prior implements host.PriorSource: one GPU for an adaptive job that has
// not reported a measurement yet.
func (s *Server) Prior(job host.JobKey) (goodput.Speedup, bool) { return s.models.Prior(job) }

// Publish implements host.ModelSource.
func (s *Server) Publish(job host.JobKey, d scheduler.Decision) { s.models.Publish(job, d) }

// State returns the job's latest known stored state, or nil.
func (s *Server) State(job host.JobKey) *State { return s.models.state(job) }

// Model returns the job's fitted model on typ (goodput.AnyType without
// Config.TypeOf), refitting if the state changed.
func (s *Server) Model(job host.JobKey, typ string) (goodput.Model, bool) {
	est, _, ok := s.models.fit(job)
	if !ok {
		return goodput.Model{}, false
	}
	return est.Model(typ)
}

// MaxReplicas returns the job's exploration bound (0 without a model).
func (s *Server) MaxReplicas(job host.JobKey) int {
	est, _, ok := s.models.fit(job)
	if !ok {
		return 0
	}
	return est.MaxReplicas()
}

// ServeTLS serves the endpoint on addr with the certificate and key in
// certFile and keyFile (re-read when they change, as a mounted Secret
// rotates) until ctx is done.
func (s *Server) ServeTLS(ctx context.Context, addr, certFile, keyFile string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return s.ServeTLSListener(ctx, ln, certFile, keyFile)
}

// ServeTLSListener is ServeTLS on a listener the caller opened.
func (s *Server) ServeTLSListener(ctx context.Context, ln net.Listener, certFile, keyFile string) error {
	kp := &keyPair{cert: certFile, key: keyFile}
	if _, err := kp.get(nil); err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(client.Path, s)
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: TLS12CipherSuites, GetCertificate: kp.get},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          nil,
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		case <-done:
		}
	}()
	err := srv.ServeTLS(ln, "", "")
	close(done)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// TLS12CipherSuites are the only suites the endpoint offers under TLS 1.2:
// ECDHE with AES-GCM or ChaCha20-Poly1305 (no CBC, no SHA-1, no static
// RSA key exchange). TLS 1.3's suites are not configurable and all modern.
var TLS12CipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// keyPair loads a certificate and key, re-reading them when either file's
// modification time changes.
type keyPair struct {
	cert, key string
	mu        sync.Mutex
	mod       [2]time.Time
	checked   time.Time
	pair      *tls.Certificate
}

func (k *keyPair) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	if k.pair != nil && now.Sub(k.checked) < 10*time.Second {
		return k.pair, nil
	}
	k.checked = now
	var mod [2]time.Time
	for i, f := range []string{k.cert, k.key} {
		st, err := os.Stat(f)
		if err != nil {
			if k.pair != nil {
				return k.pair, nil
			}
			return nil, fmt.Errorf("report: TLS: %w", err)
		}
		mod[i] = st.ModTime()
	}
	if k.pair != nil && mod == k.mod {
		return k.pair, nil
	}
	p, err := tls.LoadX509KeyPair(k.cert, k.key)
	if err != nil {
		if k.pair != nil {
			return k.pair, nil
		}
		return nil, fmt.Errorf("report: TLS: %w", err)
	}
	k.pair, k.mod = &p, mod
	return k.pair, nil
}

// httpError is a refusal with its status code.
type httpError struct {
	code int
	err  error
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, err error) {
	// At most logRate lines a second, so that a flood of junk does not
	// become a flood of log lines; the lines left out are counted.
	if s.logLimit.Allow() {
		s.cfg.Logger.Info("report refused", "code", code, "remote", r.RemoteAddr, "err", err, "suppressed", s.suppressed.Swap(0))
	} else {
		s.suppressed.Add(1)
	}
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="goodsched"`)
	}
	http.Error(w, err.Error(), code)
}

// ServeHTTP handles POST /v1/report.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.refuse(w, r, http.StatusMethodNotAllowed, errors.New("report: POST only"))
		return
	}
	if s.cfg.Leader != nil && !s.cfg.Leader() {
		w.Header().Set("Retry-After", "1")
		s.refuse(w, r, http.StatusServiceUnavailable, errors.New("report: this replica is not the leader; retry on a new connection"))
		return
	}
	resp, herr := s.handle(r)
	if herr != nil {
		if herr.code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		s.refuse(w, r, herr.code, herr.err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func (s *Server) handle(r *http.Request) (client.Response, *httpError) {
	ctx := r.Context()
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return client.Response{}, &httpError{http.StatusUnauthorized, fmt.Errorf("%w: no bearer token", ErrUnauthenticated)}
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, client.MaxRequestBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return client.Response{}, &httpError{http.StatusRequestEntityTooLarge, fmt.Errorf("report: body over %d bytes", client.MaxRequestBytes)}
		}
		return client.Response{}, &httpError{http.StatusBadRequest, fmt.Errorf("report: read body: %w", err)}
	}
	source, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		source = r.RemoteAddr
	}
	id, err := s.auth.authenticate(ctx, strings.TrimSpace(token), source)
	if err != nil {
		return client.Response{}, classify(err)
	}
	var rep client.Report
	if err := json.Unmarshal(body, &rep); err != nil {
		return client.Response{}, &httpError{http.StatusBadRequest, fmt.Errorf("%w: %w", ErrBadReport, err)}
	}
	job := host.JobKey(rep.Job)
	mem, err := authorize(ctx, s.cfg.Client, id, job)
	if err != nil {
		return client.Response{}, classify(err)
	}
	if !s.limiter(job).AllowN(s.cfg.Now(), 1) {
		return client.Response{}, &httpError{http.StatusTooManyRequests, fmt.Errorf("report: job %s reports too often", job)}
	}
	if rep.Error != "" {
		msg := rep.Error
		if len(msg) > client.MaxErrorBytes {
			msg = msg[:client.MaxErrorBytes]
		}
		s.cfg.Logger.Warn("report: the trainer kept its plan", "job", job, "pod", id.pod, "error", msg)
	}
	prev := s.models.state(job)
	// A pure reconfiguration poll stores nothing: it needs no limits, even
	// before the job's first measurements.
	poll := rep.Reconfigure && len(rep.Steps) == 0 && rep.Grad == nil && rep.Limits == nil
	if err := validateReport(&rep, (prev == nil || prev.Limits.InitBatch == 0) && !poll); err != nil {
		return client.Response{}, &httpError{http.StatusBadRequest, err}
	}
	typ := goodput.AnyType
	if s.cfg.TypeOf != nil && len(rep.Steps) > 0 {
		t, err := s.typeOf(ctx, mem.node)
		if err != nil {
			return client.Response{}, &httpError{http.StatusServiceUnavailable, err}
		}
		typ = t
	}
	if len(rep.Steps) > 0 || rep.Grad != nil || rep.Limits != nil {
		if err := s.persist(ctx, job, mem.jobUID, &rep, typ); err != nil {
			return client.Response{}, classify(err)
		}
		s.observeSteps(job, rep.Steps)
	}
	resp := s.response(job, rep.Current)
	if rep.Reconfigure {
		rc := s.reconfigure(job)
		resp.Reconfigure = &rc
	}
	return resp, nil
}

// observeSteps hands an accepted report's step times to Config.Steps.
func (s *Server) observeSteps(job host.JobKey, steps []client.Steps) {
	if s.cfg.Steps == nil || len(steps) == 0 {
		return
	}
	out := make([]host.StepTime, len(steps))
	for i, st := range steps {
		out[i] = host.StepTime{Replicas: st.Replicas, Local: st.Local, Accum: st.Accum,
			Seconds: st.OptimSeconds + float64(st.Accum)*st.AccumSeconds}
	}
	_ = s.cfg.Steps(job, out) // the host counts and logs what it refuses
}

// PublishRound implements host.RoundSink: the round's Input and Plan
// answer the jobs' reconfiguration requests (client.Report.Reconfigure)
// until the next round, through a dmr.Advisor.
func (s *Server) PublishRound(in scheduler.Input, plan scheduler.Plan) {
	a, err := dmr.New(in, plan)
	if err != nil {
		s.cfg.Logger.Warn("report: the round cannot answer reconfiguration requests", "err", err)
		s.advisor.Store(nil)
		return
	}
	s.advisor.Store(a)
}

// reconfigure answers job's reconfiguration request from the last round.
func (s *Server) reconfigure(job host.JobKey) client.Reconfiguration {
	a := s.advisor.Load()
	if a == nil {
		return client.Reconfiguration{Verdict: dmr.None.String(), Reason: "no scheduling round yet"}
	}
	ans, err := a.Reconfigure(string(job), s.cfg.Now())
	if err != nil {
		return client.Reconfiguration{Verdict: dmr.None.String(), Reason: fmt.Sprintf("not in the last round (%v)", err)}
	}
	return client.Reconfiguration{Verdict: ans.Verdict.String(), To: ans.To, Reason: ans.Reason}
}

// classify maps an error to its status code.
func classify(err error) *httpError {
	switch {
	case errors.Is(err, ErrUnauthenticated):
		return &httpError{http.StatusUnauthorized, err}
	case errors.Is(err, ErrForbidden):
		return &httpError{http.StatusForbidden, err}
	case errors.Is(err, ErrBadReport):
		return &httpError{http.StatusBadRequest, err}
	case errors.Is(err, ErrBusy):
		return &httpError{http.StatusTooManyRequests, err}
	}
	return &httpError{http.StatusServiceUnavailable, err}
}

func (s *Server) limiter(job host.JobKey) *rate.Limiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.limiters[job]
	if l == nil {
		if len(s.limiters) >= 100000 {
			clear(s.limiters)
		}
		l = rate.NewLimiter(s.cfg.Rate, s.cfg.Burst)
		s.limiters[job] = l
	}
	return l
}

func (s *Server) typeOf(ctx context.Context, node string) (string, error) {
	if node == "" {
		return goodput.AnyType, nil
	}
	s.mu.Lock()
	t, ok := s.nodeType[node]
	s.mu.Unlock()
	if ok {
		return t, nil
	}
	n, err := s.cfg.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("report: get node %s: %w", node, err)
	}
	t, ok = s.cfg.TypeOf(n)
	if !ok {
		t = goodput.AnyType
	}
	s.mu.Lock()
	if len(s.nodeType) > 100000 {
		clear(s.nodeType)
	}
	s.nodeType[node] = t
	s.mu.Unlock()
	return t, nil
}

// persist merges the report into the job's state ConfigMap, retrying on
// conflicts, and records the written state before returning. jobUID is
// the live Job's ("" for a pod group): its state is named by it, so a
// re-created Job starts from nothing.
func (s *Server) persist(ctx context.Context, job host.JobKey, jobUID types.UID, rep *client.Report, typ string) error {
	ns := s.cfg.StateNamespace
	name := StateName(string(job), jobUID)
	cms := s.cfg.Client.CoreV1().ConfigMaps(ns)
	var cur *corev1.ConfigMap
	if o, ok, _ := s.cms.GetStore().GetByKey(ns + "/" + name); ok {
		cur = o.(*corev1.ConfigMap).DeepCopy()
	}
	for attempt := 0; attempt < 8; attempt++ {
		st := &State{Job: string(job)}
		if cur != nil {
			if old, err := decodeState(cur.Data[StateKey]); err == nil && old.Job == string(job) {
				st = old
			}
		}
		if err := st.merge(rep, typ); err != nil {
			return err
		}
		data, err := encodeState(st)
		if err != nil {
			return fmt.Errorf("%w: encode: %w", ErrBadReport, err)
		}
		ann := map[string]string{JobAnnotation: string(job)}
		if jobUID != "" {
			ann[JobUIDAnnotation] = string(jobUID)
		}
		var out *corev1.ConfigMap
		if cur == nil {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: ns,
				Labels:      map[string]string{StateLabel: StateLabelValue},
				Annotations: ann,
			}, Data: map[string]string{StateKey: data}}
			out, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				cur, err = cms.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("report: get state: %w", err)
				}
				continue
			}
		} else {
			cm := cur.DeepCopy()
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[StateKey] = data
			if cm.Labels == nil {
				cm.Labels = map[string]string{}
			}
			cm.Labels[StateLabel] = StateLabelValue
			if cm.Annotations == nil {
				cm.Annotations = map[string]string{}
			}
			maps.Copy(cm.Annotations, ann)
			out, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				cur, err = cms.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("report: get state: %w", err)
				}
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("report: write state: %w", err)
		}
		st.UID = string(jobUID)
		s.models.put(job, parseRV(out.ResourceVersion), st)
		return nil
	}
	return fmt.Errorf("report: state of %s: too many conflicting writes", job)
}

// response builds the answer: the last published decision's plan, kept at
// the job's current plan unless the new one is more than 5% better.
func (s *Server) response(job host.JobKey, current *goodput.BatchPlan) client.Response {
	resp := client.Response{}
	if st := s.models.state(job); st != nil {
		resp.Observations = len(st.Configs)
	}
	est, _, adaptive := s.models.fit(job)
	resp.Adaptive = adaptive
	d, ok := s.models.decision(job)
	if !ok {
		return resp
	}
	resp.Replicas, resp.Nodes, resp.Type, resp.Plan = d.To, d.Nodes, string(d.Type), d.Batch
	if current == nil || current.Local <= 0 || d.Batch.Local <= 0 || est == nil {
		return resp
	}
	if current.Batch != current.Local*d.To*(current.Accum+1) {
		return resp // the job does not run on the decided count yet
	}
	typ := string(d.Type)
	if s.cfg.TypeOf == nil {
		typ = goodput.AnyType
	}
	m, ok := est.Model(typ)
	if !ok {
		return resp
	}
	cur := *current
	cur.Goodput = m.Goodput(d.Nodes, d.To, cur.Local, cur.Accum)
	if !goodput.Switch(cur, d.Batch) {
		resp.Plan = cur
	}
	return resp
}

// PruneStates deletes the state ConfigMaps of Jobs and pod groups that no
// longer exist (live reports false for the Job key and the UID the state
// was written for; the UID is "" for a pod group, which is alive while it
// has live pods) and that were last written more than minAge ago, so that
// a Job still unknown to live's informer, or a group between its pods,
// keeps its state. It returns how many it deleted.
func (s *Server) PruneStates(ctx context.Context, live func(host.JobKey, types.UID) bool, minAge time.Duration) (int, error) {
	n := 0
	now := s.cfg.Now()
	for _, o := range s.cms.GetStore().List() {
		cm, ok := o.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		uid := types.UID(cm.Annotations[JobUIDAnnotation])
		job := host.JobKey(cm.Annotations[JobAnnotation])
		if job == "" || live(job, uid) || now.Sub(lastWrite(cm)) < minAge {
			continue
		}
		var opts metav1.DeleteOptions
		if rv := cm.ResourceVersion; rv != "" {
			// Not if a report wrote it since the informer saw it.
			opts.Preconditions = &metav1.Preconditions{ResourceVersion: &rv}
		}
		err := s.cfg.Client.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, opts)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return n, fmt.Errorf("report: prune state %s/%s: %w", cm.Namespace, cm.Name, err)
		}
		if err == nil {
			n++
		}
	}
	return n, nil
}

// lastWrite is when a ConfigMap was last written, from its managed fields
// (its creation when they are absent).
func lastWrite(cm *corev1.ConfigMap) time.Time {
	t := cm.CreationTimestamp.Time
	for _, f := range cm.ManagedFields {
		if f.Time != nil && f.Time.After(t) {
			t = f.Time.Time
		}
	}
	return t
}
