"""Fault tooling: the fault campaign's faults on a running stack and the record they are judged on.

``faults`` kills, restarts and freezes the stack's parts; ``history`` watches every kind a ShardDB's
life touches, in etcd's revision order; ``invariants`` judges the lifecycle's rules over that history
and over the audit log; ``outages`` is one step's client-visible outage, as the installed tier writes it and
``make bench-ha`` reads it.
"""
