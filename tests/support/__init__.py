"""What the tests share, imported by any folder and importing none of them: builders, clients, fixtures' parts.

To feed the hooks: typed snapshots (``snapshots``), requests and clocks (``hook``), generated worlds
(``strategies``), and what Kubernetes writes on the stand-in World's pods (``worlds``). To read what
ships: the CRD and a strict reader of its schema (``crds``), Kubernetes' own schemas
(``kube_schema``), the preview run as a user runs it (``preview``), the budget every overlay carries
(``budget``), Dockerfiles (``dockerfiles``), the examples on the test images (``examples``) and a
ShardDB setting every field (``samples``), the rendered manifests (``manifests``), the shipped alert
rules on a faster clock (``alerts``), the reasons the lifecycle can give (``reasons``), a throwaway
CA (``pki``), ShardDBs with members (``replication``), ShardDBs that back up (``backups``), CronJob schedules to try
(``schedules``) and the prober that finds two primaries (``writable``). On a real stack: the API server's test
client (``kube``), ShardDBs on it (``sharddbs``), the tiers' shared fixtures (``stacks``) and markers
(``markers``), and the evidence a failing test keeps (``evidence``). From outside the repository:
``prerequisites``, ``recorded``.
"""
