"""The Patroni tier (marker ``patroni``, ``make patroni``): real Patroni in real containers, a real API server.

Both images a shard with standbys can run, the recipe users build (``examples/images/postgres-patroni/``,
built by podman) and the same made from Debian packages and PyPI, run the hooks' rendered configuration
under exactly the hooks' RBAC: a lone member leads and commits, a second becomes the synchronous standby;
given ``PGPASSWORD``, the second cannot clone; the stop order keeps a whole shard's primary for last.
"""
