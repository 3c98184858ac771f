"""What the tests share, imported by any folder and importing none: builders, clients, helpers, evidence.

Typed snapshots and requests to feed the hooks (``snapshots``, ``hook``, ``strategies``), the
API server's test client (``kube``) and ShardDBs on it (``sharddbs``), the examples and samples,
the real stacks' shared fixtures (``stacks``), the tier markers (``markers``), the files from
outside the repository (``prerequisites``, ``recorded``) and the evidence a failing test keeps.
"""
