"""The cluster tier (marker ``cluster``): a real etcd and kube-apiserver, one per session, a namespace per test.

What only a real API server shows: schemas, immutable fields, unknown fields, server-side apply,
the partition policy, and every child the hooks return stored and a fixed point.
"""
