"""Stand-ins: they do a real part's API work without its substance, where the real part cannot be used.

``node`` does a kubelet's and a volume provisioner's API work without containers; ``canned`` serves
the hooks' endpoints with fixed answers.
"""
