"""Replication (``hooks/replication/``), module by module: ``test_<module>.py`` holds the tests of ``<module>``.

``test_shape`` (the plan and its refusals), ``test_marks`` (Patroni's marks read), ``test_health`` (a
shard's readiness, each member's state and lag), ``test_config``, ``test_template`` and ``test_objects``
(what Patroni is given), called directly; ``test_roles`` (role trouble against the start grace),
``test_rollout`` and ``test_cleanup`` (the Jobs) through the wired hooks, and ``test_lifecycle``: a
ShardDB with members from creation to teardown. ``observe``, ``sets`` and ``scripts`` are read through
the hooks there. Member names are ``hooks/names.py``'s (``tests/decision/test_names.py``); the ShardDBs
with members these share are ``tests/support/replication.py``'s.
"""
