"""A ShardDB with ``spec.replication.members: 2`` on the production install: Patroni runs each shard on two nodes.

One shard, a primary and its synchronous standby, brought up by the real Metacontroller through
the hooks: ``examples/sharddb-members.yaml`` as written, on the Patroni image made from Debian's
packages and PyPI (the Patroni tier's) and with this tier's own credentials in its Secret. The
passwords come from a Secret through ``spec.db.env`` as a user sets them: Patroni's four, and
``POSTGRES_PASSWORD`` for the default seed, which logs in through the shard's ``-primary`` Service
with it (the hooks refuse ``PGPASSWORD`` with members: Patroni's ``pg_basebackup`` would read it).

One file per disturbance, on the one ShardDB this folder's conftest brings up (``install``,
``brought_up``, once for the folder), in the order of their numbers, which is the order pytest runs
them in: the bring-up, a busy spell, a switchover, a rollout of ``dbImage``, a drain of the
primary's node, the primary pod deleted, the standby deleted, the primary's postmaster killed,
the API server stopped, the primary's node cut off, then powered off, hibernation and wake, and
the deletion. Each step starts from a running primary and a streaming standby, so a file also
runs alone after the bring-up.

Through each step from the switchover to the power-off, writers of the user's own count
acknowledged commits, one through ``<name>-db-0-primary`` and one given every member's address
with ``target_session_attrs=read-write`` (a table each), and a poller asks every address each
member has had whether it accepts writes, about every 100 ms, and writes on each that says it
does (``disturbances.py`` starts them and reads them back). Each such step has two tests, one per
invariant, each calling its half of the one check (``tests/installed/invariants.py``): no
acknowledged commit lost, and never two primaries.
"""
