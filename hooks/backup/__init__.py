"""Backups: each shard's WAL archived to object storage by barman-cloud, the engine in the member image.

``commands`` builds the engine's command lines from ``spec.backup``; ``member`` is what a member's Patroni
configuration and pod template gain from them; ``cronjob`` and ``runs`` are the scheduled base backups and
what their runs say; ``restore`` is a new ShardDB's bootstrap from another one's backups (``spec.restore``),
``fresh`` a new shard's initdb once its archive folder is shown unused.
No archiving or restore logic is ours: the engine's own commands do it, and Patroni runs them.
"""
