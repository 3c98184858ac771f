"""Image builds: the container images a real cluster runs, written here because no registry is reachable.

``workloads`` writes the test images (postgres, redis, mariadb, memcached and pause; ``python -m
testbed.images.workloads``), ``product`` the hooks image and Metacontroller's (``python -m
testbed.images.product``), into one cache outside the repository. ``recipes/`` holds the mmdebstrap
hook scripts and the entrypoints this repository writes itself.
"""
