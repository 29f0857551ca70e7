// Package pytorch is the end-to-end test of goodsched's measurement loop
// with a real PyTorch job: client/python/examples/digits_ddp.py, a small
// CNN on scikit-learn's digits trained under DistributedDataParallel (Gloo,
// CPU) with torchrun, reporting through the real HTTPS endpoint
// (internal/report) with a token bound to a pod of its Job, scheduled by
// the real host (internal/host) with the goodput policy on a real
// kube-apiserver, etcd, Job controller and kwok nodes.
//
// The training processes run on the test machine: the test is the kubelet
// of the Job's kwok pods, and restarts torchrun with the new world size from
// the last checkpoint whenever the scheduler resizes the Job.
//
// It needs Debian's python3-torch and python3-sklearn (apt-get install -y
// python3-torch python3-sklearn); without them it skips with that line
// (under CI it fails). The package has no non-test code.
package pytorch
