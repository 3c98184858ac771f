"""What the hooks run against when Metacontroller and a cluster are not there; for tests, benchmarks and tools.

A model of Metacontroller's in-place update decision, a stand-in cluster that builds
its requests and applies answers, ``python -m hooks`` as a process on loopback, and
a real etcd + kube-apiserver. ``tests/``, ``bench/`` and ``tools/`` import from here;
nothing here imports ``tests`` (``tests/test_imports.py`` checks it).
"""
