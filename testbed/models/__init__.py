"""Models: fast copies of a real part's decision, for the fast tiers, each held to the real part by a test.

``metacontroller`` is Metacontroller's in-place update decision; ``world`` a cluster that builds
Metacontroller's requests to the hooks and applies their answers.
"""
