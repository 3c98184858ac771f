"""The words of the status, in one place: each condition's reason and message as ``kubectl describe`` shows them.

``conditions`` words each condition from the decision; ``troubles`` says what pods wait for, which
are missing and which sit on a lost node, and what a shard with members waits for or lacks; ``lists``
how names are listed in a message, and how long it may grow. The troubles themselves are found in
``hooks/trouble/`` and ``hooks/replication/roles.py``, and timed in ``hooks/lifecycle/grace.py``; a
refused request's words are ``hooks/errors.py``'s.
"""
