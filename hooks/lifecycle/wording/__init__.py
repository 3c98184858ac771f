"""The words of the status, in one place: each condition's reason and message as ``kubectl describe`` shows them.

``conditions`` words each condition from the decision; ``pods`` says what pods wait for, which are
missing and which sit on a lost node; ``roles`` what a shard with members waits for; ``lists`` how
names are listed in a message. The troubles themselves are found and timed in ``hooks/trouble/`` and
``hooks/replication/roles.py``; a refused request's words are ``hooks/errors.py``'s.
"""
