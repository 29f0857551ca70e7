// Package host applies goodsched's plans to a Kubernetes cluster: it is the
// reference host of the library's contract (snapshot → Schedule → apply)
// on batch/v1 Jobs and pod groups, for nodes with NVIDIA GPUs.
//
// # What it schedules
//
// A batch/v1 Job whose pod template names the host's scheduler
// (spec.template.spec.schedulerName, "goodsched" by default) is one
// scheduler.Job; so is a pod group (pods sharing a goodsched.io/group
// label, created by any controller) and a lone pod of the scheduler. The
// Job's annotations (see the Annotation constants) say its kind, replica
// bounds, weight, priority, preemptibility and GPU types; with none it is a
// rigid gang of spec.parallelism pods. Each pod asks for nvidia.com/gpu in
// its resources; the pods of an elastic or adaptive Job ask for one each.
//
// A Job annotated AnnotationWorkers is a W-job (EasyScale's logical
// workers, scheduler.Job.Workers): W never changes while its pods, one GPU
// each, may sit on nodes of several GPU types when the policy mixes them.
// Each bound pod is told its share of the W workers in
// AnnotationPodWorkers and AnnotationPodWorkerRanks (in the binding, and
// patched when a resize changes it); the shares are read back into
// placement.Assignment.Workers.
//
// With Config.Serving, an apps/v1 Deployment annotated AnnotationService
// is an inference service: its replica count is decided by an autoscaler
// of package serving (goodsched's Predictive by default) from its pods'
// vLLM metrics (MetricWaiting, MetricKVUsage, MetricTTFT, ...) and applied
// through its scale subresource, and its replicas enter every round as one
// pinned rigid job that takes free GPUs first, else those of the training
// jobs holding the fewest (elastic ones shrink), as scheduler/sim's
// Services do. An endpoint that is down or malformed keeps the last
// decision and is counted in goodsched_errors_total{op="serving-metrics"}.
//
// A Node offers its allocatable nvidia.com/gpu (device indices range over
// its capacity; what allocatable lacks, unhealthy GPUs or all of them while
// the device plugin restarts, is not offered, and our pods there keep
// running), of the canonical type that
// accel.TypeFromProduct gives GPU feature discovery's nvidia.com/gpu.product
// label (nvidia.com/gpu.memory separates variants). NotReady nodes are not
// offered (pods of ours bound there are evicted at once, and their gangs
// restart elsewhere); cordoned nodes and nodes with NoSchedule or
// NoExecute taints (other than Config.ToleratedTaints) keep only the GPUs
// our running pods hold; GPUs used by other schedulers' pods, and by
// terminating pods, are subtracted.
//
// # Whose pods count as ours
//
// Only pods this host bound are read as holding devices: the binding
// writes AnnotationDevices with AnnotationBinding, an HMAC of the pod's
// UID, node and devices under Config.BindingKey. Every other pod, whatever
// its annotations, counts by the GPUs it requests; a pod of ours whose MAC
// does not verify holds nothing and is evicted as conflicting. Annotations
// are parsed in linear time under a length cap.
//
// # Queues
//
// With Config.QueuesConfigMap, tenants share the cluster by the library's
// queues and quotas: the ConfigMap's QueuesConfigKey holds a QueueConfig
// (the quota.Queue tree, a namespace → queue map and a default), and
// each job's leaf queue is its LabelQueue label, else its namespace's
// queue (see QueueConfig.QueueOf).
//
// # The round
//
// Each round (every Config.Interval, and early on relevant informer
// events, at most once per Config.MinInterval, from a client-go work queue)
// the host assembles the Input, plans and applies:
//
//  1. retries the evictions it owes (pods of a gang whose bind failed),
//     evicts pods of ours on NotReady nodes with a grace period of 0 and evicts the pods of gangs
//     found half bound (after a crash, say);
//  2. builds the Input from its informers only (no per-pod GET): the
//     cluster as above, one Job per unit, and Current from the pods actually
//     bound (spec.nodeName plus the goodsched.io/devices annotation the host
//     writes, with its MAC, in each binding), so that a restarted host or a
//     new leader rebuilds the placement from the API server;
//  3. calls scheduler.Scheduler.Schedule;
//  4. applies the plan: evicts (policy/v1 Eviction, so the pod's
//     termination grace period and PodDisruptionBudgets are respected and
//     the pod gets the DisruptionTarget condition) the pods whose devices
//     the plan frees; binds pending pods through the binding subresource, a
//     unit's binds all or nothing (if any fails, the pods of the unit that
//     did bind are evicted so their controller recreates them); for an
//     elastic Job patches spec.parallelism to the planned count, in the same
//     patch as the goodsched.io/last-decision and goodsched.io/batch-plan
//     annotations, and evicts pending pods beyond the target that the Job
//     controller may create (every removal is an Eviction, never a plain
//     DELETE, so a Job's podFailurePolicy can ignore it); pods are bound onto devices freed this round
//     only once the pods that held them are gone; an elastic pod group's
//     target goes to its pods' goodsched.io/target-replicas through the
//     pods/status subresource (the host never patches a pod's spec), and
//     the pending pods of units left waiting get PodScheduled=False,
//     reason Unschedulable, the decision in the message;
//  5. records each decision that changes something as an Event on the Job
//     (one per decision, naming the pods it binds, to stay within two API
//     writes per bound pod) and on each pod it evicts, and calls
//     ModelSource.Publish for every decision.
//
// # Using it
//
//	h, err := host.New(host.Config{Client: cs, LeaderElection: true, LeaseNamespace: "goodsched-system"})
//	...
//	http.Handle("/", h.Handler()) // /metrics and /healthz
//	err = h.Run(ctx)              // until ctx is done
//
// Tests drive it deterministically with Start and RoundOnce instead of Run.
// Config.Now compresses time for digital twins (it is the scheduler's
// Input.Now); Config.Models plugs in the measurement loop (see ModelSource).
//
// With leader election, only the holder of the Lease runs rounds; every
// write of a round is made under the leader's context, which is cancelled
// the moment the lease is lost, so a non-leader never binds.
package host
