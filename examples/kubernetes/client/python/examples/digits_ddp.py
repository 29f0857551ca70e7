"""A real PyTorch job for goodsched's measurement loop: a small CNN on
scikit-learn's digits (1,797 8x8 images), trained under
DistributedDataParallel (Gloo, CPU) with torchrun, following the batch plan
the scheduler sends back.

    torchrun --standalone --nproc_per_node=2 digits_ddp.py --checkpoint /ckpt

Inside a pod of the Job it reports with the environment the README names
(GOODSCHED_URL, GOODSCHED_JOB, GOODSCHED_TOKEN_FILE, GOODSCHED_CA_FILE);
without GOODSCHED_URL it trains alone at the initial batch.

The loop is the README's: it times each optimizer step with loop.step() and
each accumulation pass with loop.accum_step(), feeds the client's
TorchGradientNoise (the DDP communication hook) after each step, and asks
loop.maybe_report() for the plan; a new plan starts a new data loader at the
same place in the epoch. The learning rate follows AdaScale (the gain
(var + sqr) / (var / S + sqr) at S = batch / init batch), the rule Pollux's
efficiency assumes.

Resizing: the scheduler changes the Job's parallelism; torchrun is then
stopped (SIGTERM) and started again with the new world size. On SIGTERM the
replicas agree, at the next step boundary, to write a checkpoint (model,
optimizer, step, place in the epoch, noise estimate) and exit 0; a new run
resumes from it, so no step is lost or repeated and the data order does not
depend on the world size: each step takes the next `batch` samples of the
epoch's permutation (seeded by --seed and the epoch) and splits them into
replicas x (accum + 1) micro-batches.

--log (rank 0) gets one JSON line per step and per evaluation; --save-grads
writes, for the first --save-grads-steps steps of every run, each replica's
gradient as the noise estimate saw it (float64, little-endian) and rank 0's
estimate after the step, for an offline check of the estimator.
"""

import argparse
import json
import math
import os
import signal
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from goodsched_client import GradientNoiseScale, Limits, Loop, Plan, TorchGradientNoise  # noqa: E402

VAL_SAMPLES = 360  # of 1,797; the split does not depend on --seed


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def load_data():
    d = load_digits()
    x = torch.tensor(d.images / 16.0).unsqueeze(1)
    y = torch.tensor(d.target, dtype=torch.long)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    val, train = perm[:VAL_SAMPLES], perm[VAL_SAMPLES:]
    return (x[train], y[train]), (x[val], y[val])


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True, help="directory of the checkpoint (shared by every run)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--steps", type=int, default=0, help="stop after this many optimizer steps (0 = no limit)")
    p.add_argument("--target-accuracy", type=float, default=0.0, help="stop at this validation accuracy (0 = never)")
    p.add_argument("--eval-samples", type=int, default=0, help="evaluate every this many training samples (0 = never)")
    p.add_argument("--init-batch", type=int, default=32)
    p.add_argument("--max-batch", type=int, default=512)
    p.add_argument("--min-local", type=int, default=8)
    p.add_argument("--max-local", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.05, help="learning rate at the initial batch")
    p.add_argument("--theta", type=float, default=0.99, help="the noise estimate's EMA factor per unit scale")
    p.add_argument("--grad-min-steps", type=int, default=50,
                   help="steps of a run before its noise estimate is reported (its first steps are noisy)")
    p.add_argument("--report-period", type=float, default=30.0, help="seconds between reports")
    p.add_argument("--fixed-batch", action="store_true", help="report, but train at the initial batch whatever the plan")
    p.add_argument("--warmup-steps", type=int, default=2,
                   help="untimed steps at the start of each run (DDP builds its buckets in the first)")
    p.add_argument("--checkpoint-every", type=int, default=100, help="steps between checkpoints (and on SIGTERM)")
    p.add_argument("--log", default="", help="rank 0 appends a JSON line per step and evaluation")
    p.add_argument("--save-grads", default="", help="directory for per-replica gradients (offline check)")
    p.add_argument("--save-grads-steps", type=int, default=0)
    return p.parse_args(argv)


class Stop:
    """SIGTERM (torchrun forwards it when it is stopped) asks for a
    checkpoint at the next step boundary."""

    def __init__(self):
        self.asked = False
        signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, *_):
        self.asked = True

    def agreed(self):
        t = torch.tensor([1.0 if self.asked else 0.0])
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item() > 0


def batches(train_n, seed, epoch, pos, plan, world, rank):
    """The micro-batches of this rank for each step of plan from pos on, as
    (epoch, pos, [index tensors]) until the epoch has no full batch left."""
    g = torch.Generator().manual_seed(seed * 100003 + epoch)
    perm = torch.randperm(train_n, generator=g)
    while pos + plan.batch <= train_n:
        block = perm[pos:pos + plan.batch]
        micro = [block[(p * world + rank) * plan.local:(p * world + rank + 1) * plan.local] for p in range(plan.accum + 1)]
        yield micro
        pos += plan.batch


def gain(stats, scale):
    """AdaScale's gain at scale S: (var + sqr) / (var / S + sqr), 1 without
    statistics."""
    if stats is None or scale <= 1:
        return 1.0
    sqr, var = stats
    den = var / scale + sqr
    return (var + sqr) / den if den > 0 else scale


def main(argv=None):
    args = parse_args(argv)
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    (xt, yt), (xv, yv) = load_data()
    train_n = len(yt)

    model = Net()
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    limits = Limits(init_batch=args.init_batch, max_batch=args.max_batch, min_local=args.min_local,
                    max_local=args.max_local, accumulation=True)

    def reachable(plan):
        if plan.batch > train_n:
            return "global batch %d is over the %d training samples the data loader has" % (plan.batch, train_n)
        return None

    grads = {"pieces": []}
    record = None
    if args.save_grads and args.save_grads_steps > 0:
        record = grads["pieces"].append
    gns = TorchGradientNoise(ddp, noise=GradientNoiseScale(theta=args.theta), record=record)

    state = {"step": 0, "epoch": 0, "pos": 0, "samples": 0, "train_seconds": 0.0, "best_acc": 0.0}
    ckpt = os.path.join(args.checkpoint, "checkpoint.pt")
    if os.path.exists(ckpt):
        c = torch.load(ckpt)
        model.load_state_dict(c["model"])
        opt.load_state_dict(c["opt"])
        gns.load_state_dict(c["gns"])
        state = c["state"]
    run_start = state["step"]

    local = -(-args.init_batch // world)
    fixed = Plan(batch=local * world, local=local)
    if os.environ.get("GOODSCHED_URL"):
        loop = Loop.from_env(limits, period_s=args.report_period, check=reachable)
    else:
        loop = None

    log = open(args.log, "a") if args.log and rank == 0 else None
    stop = Stop()

    def write(d):
        if log:
            log.write(json.dumps(d) + "\n")
            log.flush()

    def save():
        if rank == 0:
            tmp = ckpt + ".tmp"
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "gns": gns.state_dict(),
                        "state": state}, tmp)
            os.replace(tmp, ckpt)
        dist.barrier()

    def evaluate():
        model.eval()
        with torch.no_grad():
            acc = (model(xv).argmax(1) == yv).double().mean().item()
        model.train()
        return acc

    write({"run": run_start, "world": world, "pid": os.getpid()})
    next_eval = (state["samples"] // args.eval_samples + 1) * args.eval_samples if args.eval_samples else 0
    done = False
    while not done:
        plan = fixed if loop is None or args.fixed_batch else loop.plan
        if plan.problem(world) or reachable(plan):
            plan = fixed
        new_plan = False
        for micro in batches(train_n, args.seed, state["epoch"], state["pos"], plan, world, rank):
            t0 = time.perf_counter()
            aside = 0.0  # seconds of evaluation and checkpointing, not training
            scale = plan.batch / args.init_batch
            for g in opt.param_groups:
                g["lr"] = args.lr * gain(gns.noise.stats(), scale)
            timed = loop is not None and state["step"] - run_start >= args.warmup_steps
            for idx in micro[:-1]:
                with (loop.accum_step() if timed else _null()), ddp.no_sync():
                    (F.cross_entropy(ddp(xt[idx]), yt[idx]) / (plan.accum + 1)).backward()
            idx = micro[-1]
            with (loop.step() if timed else _null()):
                (F.cross_entropy(ddp(xt[idx]), yt[idx]) / (plan.accum + 1)).backward()
                opt.step()
            before = gns.state_dict() if record is not None else None
            stats = gns.step(scale=scale)
            opt.zero_grad(set_to_none=False)
            if loop and state["step"] - run_start >= args.grad_min_steps:
                loop.grad(stats)
            state["step"] += 1
            state["pos"] += plan.batch
            state["samples"] += plan.batch
            rec = {"step": state["step"], "world": world, "batch": plan.batch, "local": plan.local,
                   "accum": plan.accum, "epoch": state["epoch"], "pos": state["pos"], "scale": scale,
                   "train_seconds": state["train_seconds"] + time.perf_counter() - t0}
            if stats is not None:
                rec["sqr"], rec["var"] = stats
            if loop and loop.last_error is not None:
                rec["report_error"] = str(loop.last_error)
            write(rec)
            if record is not None:
                n = state["step"] - run_start
                if n <= args.save_grads_steps:
                    save_grads(args.save_grads, run_start, state["step"], rank, grads["pieces"], before, rec)
                grads["pieces"].clear()
            if next_eval and state["samples"] >= next_eval:
                t1 = time.perf_counter()
                next_eval += args.eval_samples
                acc = evaluate() if rank == 0 else 0.0
                t = torch.tensor([acc])
                dist.broadcast(t, 0)
                if args.target_accuracy and t.item() >= args.target_accuracy:
                    done = True
                aside += time.perf_counter() - t1
                write({"eval": state["step"], "samples": state["samples"], "acc": acc,
                       "train_seconds": state["train_seconds"] + time.perf_counter() - t0 - aside})
            if args.steps and state["step"] >= args.steps:
                done = True
            if loop and loop.maybe_report() != plan:
                if args.fixed_batch:
                    loop.plan = fixed  # measured and reported as what it runs
                else:
                    new_plan = True
            stopping = stop.agreed()
            state["train_seconds"] += time.perf_counter() - t0 - aside
            if stopping:
                save()
                write({"stopped": state["step"], "world": world})
                dist.destroy_process_group()
                return 0
            if state["step"] % args.checkpoint_every == 0:
                save()
            if done or new_plan:
                break
        else:
            state["epoch"] += 1
            state["pos"] = 0
    save()
    write({"done": state["step"], "world": world})
    dist.destroy_process_group()
    return 0


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False


def save_grads(root, run, step, rank, pieces, before, rec):
    d = os.path.join(root, "run-%06d" % run)
    os.makedirs(d, exist_ok=True)
    g = torch.cat(pieces) if pieces else torch.zeros(0)
    g.numpy().astype("<f8").tofile(os.path.join(d, "step-%06d-rank-%d.f64" % (step, rank)))
    if rank == 0:
        out = dict(rec)
        out["before"] = before  # the estimator's state before this step
        with open(os.path.join(d, "steps.jsonl"), "a") as f:
            f.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    sys.exit(main())
