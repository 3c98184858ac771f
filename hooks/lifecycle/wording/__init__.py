"""The words of the status, in one place: each condition's reason and message as ``kubectl describe`` shows them.

One module per condition: ``available``, ``progressing`` (the step, what pods and shards wait for within
their grace, what a stopping step waits for on a lost node) and ``degraded`` (each reason the ShardDB is
worse than asked, and what is missing, failing or lost); ``lists`` holds what they share. The troubles
themselves are found in ``hooks/trouble/`` and ``hooks/replication/roles.py``, and timed in
``hooks/lifecycle/grace.py``; a refused request's words are ``hooks/errors.py``'s.
"""
