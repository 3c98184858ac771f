"""Image builds: the container images a real cluster runs, written here because no registry is reachable.

``workloads`` writes the test images (postgres, redis, mariadb, memcached and pause; ``python -m
testbed.images.workloads``; and, when named, the Patroni recipe's, ``postgres-patroni``), ``product``
the hooks image and Metacontroller's (``python -m testbed.images.product``), both with ``toolkit``:
the cache outside the repository and its keys, mmdebstrap's settings and hook commands, this
machine's Debian mirrors, the OCI archives. ``recipes/`` holds the mmdebstrap hook scripts and the
entrypoints this repository writes itself.
"""
