"""What the hooks decide and render for an observed world, called in-process: no HTTP, no server.

The lifecycle gate by gate, start graces, names, templates kept or rolled, quantities, reading
Metacontroller's request, the answers themselves, the honest status, and the recorded requests of a
real Metacontroller replayed; in ``replication/``, standbys per shard, one file per module of
``hooks/replication/``; in ``backup/``, the archive's command lines, what a member gains from them, the
base backups' CronJob and what its runs make of the status.
"""
