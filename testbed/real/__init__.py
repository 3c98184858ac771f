"""The real stack: real programs, built or installed, started by the tests and cleaned up after.

The control plane (etcd, kube-apiserver) on loopback, with the one client of it and the one kubectl
wrapper (``apiclient``, ``kubectl``: every floor of the testbed may use them), real nodes
(containerd, runc, the kubelet, kube-proxy, kube-router) in namespaces of their own and the cluster
that joins them, the hooks' server process, readers of what they leave (the audit log, a partitioned
install's manifests, the logs kept as evidence), the machine's prerequisites, and the build scripts
of their binaries (``build-binaries.sh``, ``build-node-binaries.sh``, cached outside the repository).
"""
