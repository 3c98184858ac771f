"""Replication: standbys per shard (``spec.replication.members`` 2 or 3), run by Patroni.

The feature's modules, on the hooks' pipeline (observe finds, decide judges, render builds):

- observe: ``marks`` reads what Patroni writes (its pod labels and annotations, ``-sync``, ``-config``),
  ``observe`` reduces each shard's StatefulSet and members to a ``sets.ShardSetView``;
- decide: ``shape`` (what the spec asks, given the shards that exist, and its refusals), ``health``
  (when a shard is ready, each member's state), ``roles`` (shards whose roles are wrong, and since when);
- build: ``config`` (Patroni's configuration), ``callback`` (its role-change callback, which keeps
  the primary label on the primary alone), ``tls`` (each member's own key and certificate, and TLS as the
  only way in), ``template`` (a member's pod template, which the decision
  compares with what runs), ``objects`` (RBAC, Services, NetworkPolicies, budgets, StatefulSets),
  ``rollout`` and ``cleanup`` (the Jobs), ``scripts`` (the pod those Jobs run).

Member names and Patroni's label vocabulary live with every other name, in ``hooks/names.py``.
"""
