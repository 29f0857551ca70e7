"""goodsched measurement-loop client for PyTorch (and any Python) trainers.

A training job's pods report to the goodsched scheduler what Pollux's
goodput model needs -- the measured time of each optimizer step and
accumulation pass per configuration (nodes, replicas, per-GPU batch,
accumulation steps) and the gradient noise statistics -- and get back the
batch plan the scheduler chose (per-GPU batch, accumulation steps, total
batch) and its target replica count.

Only the standard library is needed; torch is used when present (for
TorchGradientNoise, which computes the statistics from per-replica
gradients inside DistributedDataParallel's all-reduce).

Usage (see examples/kubernetes/README.md, "Measurement loop")::

    loop = goodsched_client.Loop.from_env(limits=Limits(init_batch=128, max_batch=4096,
                                                       min_local=32, max_local=1024))
    for batch in data:
        with loop.step():           # times one optimizer step
            loss = model(batch).backward(); opt.step()
        loop.grad(local_sqr, total_sqr, count)   # optional gradient statistics
        plan = loop.maybe_report()  # every 30 s; returns the latest Plan

The wire format is JSON over HTTPS: POST /v1/report with the pod's
projected ServiceAccount token (audience "goodsched") as the bearer token.
"""

import contextlib
import json
import math
import os
import ssl
import threading
import time
import urllib.error
import urllib.request

__all__ = [
    "Limits",
    "Plan",
    "Response",
    "Reconfiguration",
    "ReportError",
    "BadResponse",
    "Client",
    "Meter",
    "GradientNoiseScale",
    "TorchGradientNoise",
    "Loop",
]

PATH = "/v1/report"
DEFAULT_TOKEN_FILE = "/var/run/secrets/goodsched/token"
DEFAULT_CA_FILE = "/var/run/secrets/goodsched/ca.crt"
ENV_URL = "GOODSCHED_URL"
ENV_JOB = "GOODSCHED_JOB"
ENV_TOKEN_FILE = "GOODSCHED_TOKEN_FILE"
ENV_CA_FILE = "GOODSCHED_CA_FILE"
MAX_REQUEST_BYTES = 64 << 10
REPORT_PERIOD_S = 30.0  # AdaptDL reports every 30 s


class Limits:
    """A job's batch-size limits (goodput.Limits): the total batch it was
    tuned for (init_batch, M0), the largest total batch (max_batch; <=
    init_batch = no adaptation), the per-GPU bounds of one pass and whether
    gradient accumulation is allowed."""

    def __init__(self, init_batch, max_batch=0, min_local=0, max_local=0, accumulation=False):
        if int(init_batch) < 1:
            raise ValueError("init_batch must be >= 1")
        self.init_batch = int(init_batch)
        self.max_batch = int(max_batch)
        self.min_local = int(min_local)
        self.max_local = int(max_local)
        self.accumulation = bool(accumulation)

    def to_json(self):
        d = {"init_batch": self.init_batch}
        if self.max_batch:
            d["max_batch"] = self.max_batch
        if self.min_local:
            d["min_local"] = self.min_local
        if self.max_local:
            d["max_local"] = self.max_local
        if self.accumulation:
            d["accumulation"] = True
        return d


class Plan:
    """A batch plan: total batch = local * replicas * (accum + 1)."""

    __slots__ = ("batch", "local", "accum", "goodput")

    def __init__(self, batch=0, local=0, accum=0, goodput=0.0):
        self.batch, self.local, self.accum, self.goodput = int(batch), int(local), int(accum), float(goodput)

    @classmethod
    def from_json(cls, d):
        d = d or {}
        return cls(d.get("batch", 0), d.get("local", 0), d.get("accum", 0), d.get("goodput", 0.0))

    def to_json(self):
        return {"batch": self.batch, "local": self.local, "accum": self.accum, "goodput": self.goodput}

    def __bool__(self):
        return self.local > 0

    def __eq__(self, other):
        return isinstance(other, Plan) and self.to_json() == other.to_json()

    def problem(self, replicas):
        """Why the plan cannot be run on replicas replicas as given (a
        per-GPU batch below 1, negative accumulation, or a total batch
        that is not local * replicas * (accum + 1)), or None."""
        if self.local < 1 or self.accum < 0:
            return "plan %r: local must be >= 1 and accum >= 0" % (self,)
        if self.batch != self.local * replicas * (self.accum + 1):
            return "plan %r: batch is not local * %d replicas * (accum + 1)" % (self, replicas)
        if not math.isfinite(self.goodput):
            return "plan %r: goodput is not finite" % (self,)
        return None

    def __repr__(self):
        return "Plan(batch=%d, local=%d, accum=%d, goodput=%g)" % (self.batch, self.local, self.accum, self.goodput)


class Response:
    """The endpoint's answer: the plan to train with and the scheduler's
    target replicas, nodes and GPU type."""

    def __init__(self, d):
        self.plan = Plan.from_json(d.get("plan"))
        self.replicas = int(d.get("replicas", 0))
        self.nodes = int(d.get("nodes", 0))
        self.type = d.get("type", "")
        self.adaptive = bool(d.get("adaptive", False))
        self.observations = int(d.get("observations", 0))
        rc = d.get("reconfigure")
        self.reconfigure = Reconfiguration(rc) if rc is not None else None


class Reconfiguration:
    """The scheduler's answer to a job that asked, at a synchronisation
    point, whether to change its size (DMR): verdict "expand" (devices are
    free and no job waits for them: grow to `to`), "shrink" (a queued job
    could start if this one gave devices back: shrink to `to`) or "none"
    (keep `to` devices; 0 when the job does not run), with the reason."""

    VERDICTS = ("expand", "shrink", "none")

    def __init__(self, d):
        if not isinstance(d, dict):
            raise TypeError("reconfigure is not a JSON object")
        self.verdict = d.get("verdict", "none")
        if self.verdict not in self.VERDICTS:
            raise ValueError("unknown verdict %r" % (self.verdict,))
        self.to = int(d.get("to", 0))
        self.reason = str(d.get("reason", ""))

    def __repr__(self):
        return "Reconfiguration(%s, to=%d, %r)" % (self.verdict, self.to, self.reason)


LEADER_TRIES = 8
"""How many times Client.report posts while the scheduler answers 503."""


class ReportError(Exception):
    """A refused report: code is the HTTP status (401 bad token, 403 not a
    pod of the job, 413 too large, 429 too often, 400 bad content)."""

    def __init__(self, code, message):
        super().__init__("goodsched: report refused: HTTP %d: %s" % (code, message.strip()))
        self.code = code


class BadResponse(ValueError):
    """An acknowledged report whose answer is not a valid response (not
    JSON, or fields of the wrong type): the report itself was stored."""


MAX_ERROR_CHARS = 1024
"""The longest trainer error message a report carries."""


class Client:
    """Posts reports for one job. The token file is read before every
    report (projected tokens rotate). opener, if given, replaces urllib's
    HTTPS opener (tests)."""

    def __init__(self, url, job, token_file=None, ca_file=None, timeout_s=10.0, opener=None):
        if not url:
            raise ValueError("url is empty")
        if not job or job.count("/") != 1:
            raise ValueError("job %r is not namespace/name" % (job,))
        self.url = url.rstrip("/") + PATH
        self.job = job
        self.token_file = token_file or DEFAULT_TOKEN_FILE
        self.timeout_s = timeout_s
        if opener is None:
            ctx = ssl.create_default_context(cafile=ca_file or DEFAULT_CA_FILE)
            opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx))
        self._opener = opener

    @classmethod
    def from_env(cls, env=None):
        env = os.environ if env is None else env
        return cls(env.get(ENV_URL, ""), env.get(ENV_JOB, ""), env.get(ENV_TOKEN_FILE) or None, env.get(ENV_CA_FILE) or None)

    def reconfigure(self):
        """Asks the scheduler, at one of the job's synchronisation points,
        whether to expand, shrink or keep its size (a report that carries
        only the question) and returns the Reconfiguration. Raises
        ReportError for a refusal and BadResponse when the answer carries
        no reconfiguration (a scheduler that does not speak DMR)."""
        resp = self.report(reconfigure=True)
        if resp.reconfigure is None:
            raise BadResponse("goodsched: the endpoint does not answer reconfiguration requests")
        return resp.reconfigure

    def report(self, limits=None, steps=None, grad=None, current=None, error=None, reconfigure=False):
        """Posts one report and returns a Response. steps are Meter.take()'s
        dicts, grad a (sqr, var) pair, current the Plan trained with now,
        error the trainer's problem with the last plan it got (e.g. a
        global batch its data loader cannot reach), which the scheduler
        logs; reconfigure also asks the DMR question (see reconfigure).
        Raises ReportError for a refusal and BadResponse when the
        report was acknowledged but the answer is malformed."""
        with open(self.token_file) as f:
            token = f.read().strip()
        body = {"job": self.job}
        if limits is not None:
            body["limits"] = limits.to_json()
        if steps:
            # Keys starting with "_" are the Meter's own (for restore).
            body["steps"] = [{k: v for k, v in d.items() if not k.startswith("_")} for d in steps]
        if grad is not None:
            body["grad"] = {"sqr": float(grad[0]), "var": float(grad[1])}
        if current:
            body["current"] = current.to_json()
        if error:
            body["error"] = str(error)[:MAX_ERROR_CHARS]
        if reconfigure:
            body["reconfigure"] = True
        data = json.dumps(body).encode()
        if len(data) > MAX_REQUEST_BYTES:
            raise ValueError("report of %d bytes is over the endpoint's limit" % len(data))
        for attempt in range(1, LEADER_TRIES + 1):
            req = urllib.request.Request(self.url, data=data, method="POST", headers={
                "Content-Type": "application/json", "Authorization": "Bearer " + token})
            try:
                with self._opener.open(req, timeout=self.timeout_s) as resp:
                    raw = resp.read(1 << 20)
                try:
                    d = json.loads(raw.decode())
                    if not isinstance(d, dict):
                        raise TypeError("not a JSON object")
                    return Response(d)
                except (ValueError, TypeError, AttributeError) as e:
                    raise BadResponse("goodsched: malformed response: %s" % (e,)) from None
            except urllib.error.HTTPError as e:
                err = ReportError(e.code, e.read(4096).decode(errors="replace"))
            # 503: a replica that is not the leader. Each urllib request is
            # a new connection, so the Service may pick another replica.
            if err.code != 503 or attempt == LEADER_TRIES:
                raise err
            time.sleep(0.05 * attempt)


class Meter:
    """Aggregates measured pass times per shape (nodes, replicas, local,
    accum) between reports. Thread safe. clock is a monotonic seconds
    function (time.perf_counter by default)."""

    def __init__(self, clock=time.perf_counter):
        self._clock = clock
        self._lock = threading.Lock()
        self._acc = {}

    def _get(self, shape):
        a = self._acc.get(shape)
        if a is None:
            a = self._acc[shape] = [0, 0.0, 0, 0.0, 0, 0.0]  # optimN, optimSum, accumN, accumSum, syncN, syncSum
        return a

    def optim(self, shape, seconds, sync_seconds=0.0):
        """Records an optimizer step (its synchronising pass included)."""
        if not seconds > 0:
            return
        with self._lock:
            a = self._get(tuple(shape))
            a[0] += 1
            a[1] += seconds
            if sync_seconds > 0:
                a[4] += 1
                a[5] += sync_seconds

    def accum(self, shape, seconds):
        """Records an accumulation pass (no synchronisation)."""
        if not seconds > 0:
            return
        with self._lock:
            a = self._get(tuple(shape))
            a[2] += 1
            a[3] += seconds

    @contextlib.contextmanager
    def time(self, shape, optim=True):
        """Times the block as an optimizer step (optim) or accumulation pass."""
        t0 = self._clock()
        yield
        dt = self._clock() - t0
        if optim:
            self.optim(shape, dt)
        else:
            self.accum(shape, dt)

    def take(self):
        """Returns the measurements since the last take (wire dicts, sorted)."""
        out = []
        with self._lock:
            for shape in sorted(self._acc):
                a = self._acc[shape]
                if a[0] == 0:
                    continue
                nodes, replicas, local, accum = shape
                d = {"nodes": nodes, "replicas": replicas, "local": local, "accum": accum,
                     "count": a[0], "optim_seconds": a[1] / a[0]}
                if a[2]:
                    d["accum_count"], d["accum_seconds"] = a[2], a[3] / a[2]
                if a[4]:
                    d["sync_seconds"], d["_sync_count"] = a[5] / a[4], a[4]
                out.append(d)
            for d in out:
                del self._acc[(d["nodes"], d["replicas"], d["local"], d["accum"])]
        return out


    def restore(self, steps):
        """Puts back measurements take() returned that could not be
        reported, so that the next report carries them."""
        with self._lock:
            for d in steps:
                a = self._get((d["nodes"], d["replicas"], d["local"], d["accum"]))
                a[0] += d["count"]
                a[1] += d["optim_seconds"] * d["count"]
                if d.get("accum_count"):
                    a[2] += d["accum_count"]
                    a[3] += d["accum_seconds"] * d["accum_count"]
                if d.get("_sync_count"):
                    a[4] += d["_sync_count"]
                    a[5] += d["sync_seconds"] * d["_sync_count"]


class GradientNoiseScale:
    """Pollux's gradient noise statistics from per-replica gradients (the
    two-batch-size estimator). Each step supplies the mean squared norm of
    the `count` individual gradients (one per replica, each at batch
    total/count) and the squared norm of their average; with scale =
    total batch / init batch:

        sqr = (count * |g_avg|^2 - mean |g_i|^2) / (count - 1)
        var = (mean |g_i|^2 - |g_avg|^2) * scale / (count - 1)

    estimate |g|^2 and tr(Sigma) at the initial batch. Both are smoothed by
    an exponential moving average with factor theta**scale, bias-corrected,
    and floored (var >= 1e-6, sqr >= 0), as goodput.NoiseScale does. A
    single replica without accumulation has one gradient per step: pass the
    previous and the current gradient's norms as a count-2 step
    (update_differenced), and reset() when switching back."""

    def __init__(self, theta=0.999):
        if not 0 < theta < 1:
            theta = 0.999
        self.theta = theta
        self.reset()

    def reset(self):
        self._sqr = self._var = self._weight = 0.0

    def update(self, mean_local_sqr, total_sqr, count, scale):
        if count < 2:
            raise ValueError("count = %r, want >= 2" % (count,))
        for name, v in (("mean_local_sqr", mean_local_sqr), ("total_sqr", total_sqr)):
            if not (math.isfinite(v) and v >= 0):
                raise ValueError("%s = %r" % (name, v))
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError("scale = %r" % (scale,))
        c = float(count)
        sqr = (c * total_sqr - mean_local_sqr) / (c - 1)
        var = (mean_local_sqr - total_sqr) * scale / (c - 1)
        f = self.theta ** scale
        s = f * self._sqr + (1 - f) * sqr
        v = f * self._var + (1 - f) * var
        if not (math.isfinite(s) and math.isfinite(v)):
            raise ValueError("estimates overflow")
        self._sqr, self._var = s, v
        self._weight = f * self._weight + (1 - f)

    def update_from_vectors(self, grads, scale):
        """grads: the individual gradients as equal-length float sequences."""
        n = len(grads)
        if n < 2:
            raise ValueError("need at least two gradients")
        dim = len(grads[0])
        mean_local = sum(sum(x * x for x in g) for g in grads) / n
        avg = [sum(g[k] for g in grads) / n for k in range(dim)]
        self.update(mean_local, sum(x * x for x in avg), n, scale)

    def update_differenced(self, prev_sqr, cur_sqr, avg_sqr, scale):
        """A single-gradient step: prev and current gradient's squared norms
        and the squared norm of their average, as a count-2 step."""
        self.update((prev_sqr + cur_sqr) / 2, avg_sqr, 2, scale)

    def state_dict(self):
        """The estimator's state, for a checkpoint (load_state_dict)."""
        return {"theta": self.theta, "sqr": self._sqr, "var": self._var, "weight": self._weight}

    def load_state_dict(self, d):
        self.theta = float(d["theta"])
        self._sqr, self._var, self._weight = float(d["sqr"]), float(d["var"]), float(d["weight"])

    def stats(self):
        """(sqr, var), or None before the first update."""
        if self._weight <= 0:
            return None
        return max(self._sqr / self._weight, 0.0), max(self._var / self._weight, 1e-6)


class TorchGradientNoise:
    """Feeds a GradientNoiseScale from a torch DistributedDataParallel
    model. With several replicas a communication hook adds each bucket's
    local squared norm before the all-reduce and the averaged gradient's
    after it. Call step(scale) after each optimizer step (and only then:
    accumulation passes run under no_sync, so the hook sees the accumulated
    gradient of one replica at local * (accum + 1) samples), with scale =
    total batch / init batch.

    On a single replica there is one gradient per step: step() then
    differences consecutive steps' gradients (read from the parameters'
    .grad) as a count-2 step at twice the scale, as AdaptDL does, and the
    averages are reset when the job next runs on several replicas (the
    differenced estimate is biased).

    record, if given, is called with each piece of this replica's own
    gradient that the estimate uses, as a float64 copy: with several
    replicas each bucket before the all-reduce, on one replica the whole
    flattened gradient once per step (e.g. to check the estimate offline).
    Needs torch."""

    def __init__(self, ddp_model, noise=None, record=None):
        import torch  # noqa: F401  (optional dependency)
        import torch.distributed as dist

        self._torch, self._dist = torch, dist
        self.noise = noise or GradientNoiseScale()
        self._record = record
        self._params = [p for p in ddp_model.parameters() if p.requires_grad]
        self._local = 0.0
        self._total = 0.0
        self._prev = None  # the previous step's gradient (one replica)
        self._biased = False  # the averages hold differenced estimates
        ddp_model.register_comm_hook(None, self._hook)

    def _hook(self, _state, bucket):
        buf = bucket.buffer()
        world = self._dist.get_world_size()
        if world == 1:
            fut = self._torch.futures.Future()
            fut.set_result(buf)
            return fut
        if self._record is not None:
            self._record(buf.detach().double().clone())
        self._local += float(buf.double().pow(2).sum())
        fut = self._dist.all_reduce(buf.div_(world), async_op=True).get_future()

        def done(f):
            out = f.value()[0]
            self._total += float(out.double().pow(2).sum())
            return out

        return fut.then(done)

    def step(self, scale):
        """Folds the step's statistics into the estimate and returns stats()."""
        torch, dist = self._torch, self._dist
        world = dist.get_world_size()
        if world == 1:
            self._local = self._total = 0.0
            g = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1).double()
                           for p in self._params])
            if self._record is not None:
                self._record(g.clone())
            prev, self._prev = self._prev, g
            if prev is not None:
                avg = (prev + g) / 2
                self.noise.update_differenced(float(prev.pow(2).sum()), float(g.pow(2).sum()),
                                              float(avg.pow(2).sum()), 2 * scale)
                self._biased = True
            return self.noise.stats()
        self._prev = None
        # NCCL reduces only GPU tensors; gloo takes CPU ones.
        device = "cpu"
        if dist.get_backend() == "nccl":
            device = torch.device("cuda", torch.cuda.current_device())
        local = torch.tensor([self._local], dtype=torch.float64, device=device)
        dist.all_reduce(local)
        mean_local = float(local) / world
        total = self._total
        self._local = self._total = 0.0
        if self._biased:
            self.noise.reset()
            self._biased = False
        self.noise.update(mean_local, total, world, scale)
        return self.noise.stats()

    def state_dict(self):
        """The estimate's state, for a checkpoint (load_state_dict)."""
        d = self.noise.state_dict()
        d["biased"] = self._biased
        return d

    def load_state_dict(self, d):
        self.noise.load_state_dict(d)
        self._biased = bool(d.get("biased", False))


class Loop:
    """Ties a Meter, optional gradient statistics and a Client together for
    a training loop: times steps in the current shape, reports every
    period_s seconds, and keeps the latest plan (Pollux's 5% hysteresis is
    applied by the scheduler: the response keeps the current plan unless
    the new one is better by more than 5%).

    Bad answers never stop training: a refused report (401, 403, 413, 429,
    503 after the client's retries), an unreachable endpoint or a malformed
    answer keeps the current plan and the next report is tried after
    period_s. A plan that is malformed (Plan.problem) or that check(plan)
    refuses (check returns a message, e.g. a global batch the data loader
    cannot reach) is not adopted either, and the message goes with the next
    report.

    dist, if given, is an initialised torch.distributed with several
    processes (from_env sets it): then every process must call
    maybe_report at the same point of each step; rank 0 alone reports and
    broadcasts its plan, so that all replicas switch plans at the same
    step."""

    def __init__(self, client, limits, nodes=1, replicas=1, plan=None, period_s=REPORT_PERIOD_S, clock=time.monotonic,
                 check=None, dist=None):
        self.client = client
        self.limits = limits
        self.meter = Meter()
        self.nodes, self.replicas = nodes, replicas
        local = -(-limits.init_batch // max(replicas, 1))
        self.plan = plan or Plan(local=local, batch=local * replicas)
        self.period_s = period_s
        self._clock = clock
        self._check = check
        self._dist = dist if dist is not None and dist.get_world_size() > 1 else None
        self._last = None
        self._grad = None
        self._error = None  # sent with the next report
        self.last_response = None
        self.last_error = None

    @classmethod
    def from_env(cls, limits, **kw):
        """A Loop whose shape comes from torch.distributed's world size when
        initialised (WORLD_SIZE otherwise) and NNODES (default 1)."""
        replicas = int(os.environ.get("WORLD_SIZE", "1"))
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                replicas = dist.get_world_size()
                kw.setdefault("dist", dist)
        except ImportError:
            pass
        nodes = int(os.environ.get("NNODES", "1"))
        return cls(Client.from_env(), limits, nodes=nodes, replicas=replicas, **kw)

    def shape(self):
        return (self.nodes, self.replicas, self.plan.local or self.limits.init_batch, self.plan.accum)

    def step(self):
        """Context manager timing one optimizer step in the current shape."""
        return self.meter.time(self.shape(), optim=True)

    def accum_step(self):
        """Context manager timing one accumulation pass."""
        return self.meter.time(self.shape(), optim=False)

    def grad(self, sqr_var):
        """Records the latest (sqr, var) gradient statistics."""
        if sqr_var is not None:
            self._grad = (float(sqr_var[0]), float(sqr_var[1]))

    def maybe_report(self, force=False):
        """Reports when period_s has passed since the last report (or when
        forced) and returns the plan to train with."""
        if self._dist is None or self._dist.get_rank() == 0:
            self._maybe_report(force)
        if self._dist is not None:
            self._broadcast_plan()
        return self.plan

    def _maybe_report(self, force):
        now = self._clock()
        if not force and self._last is not None and now - self._last < self.period_s:
            return
        self._last = now
        steps = self.meter.take()
        error, self._error = self._error, None
        try:
            resp = self.client.report(limits=self.limits, steps=steps, grad=self._grad, current=self.plan, error=error)
        except BadResponse as e:
            # Stored by the scheduler: the measurements are not sent again.
            self.last_error = e
            return
        except (ReportError, OSError) as e:
            # Keep training on the plan we have; the measurements (and
            # the error) go with the next report.
            self.meter.restore(steps)
            self._error = self._error or error
            self.last_error = e
            return
        self.last_error = None
        self.last_response = resp
        if not resp.plan or resp.replicas not in (0, self.replicas) or resp.plan == self.plan:
            return
        problem = resp.plan.problem(self.replicas)
        if problem is None and self._check is not None:
            problem = self._check(resp.plan)
        if problem:
            self._error = problem
            self.last_error = ValueError(problem)
            return
        self.plan = resp.plan

    def _broadcast_plan(self):
        import torch

        device = "cpu"
        if self._dist.get_backend() == "nccl":
            device = torch.device("cuda", torch.cuda.current_device())
        p = self.plan
        t = torch.tensor([p.batch, p.local, p.accum, p.goodput], dtype=torch.float64, device=device)
        self._dist.broadcast(t, 0)
        b, l, a, g = t.tolist()
        self.plan = Plan(int(b), int(l), int(a), g)
