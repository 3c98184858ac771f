"""The end-to-end tier (marker ``e2e``): the real stack, Metacontroller and the controllers, with the node agent.

One stack per session and a namespace per test; the files in ``OWN_STACKS`` (``tools/suite.py``)
start stacks of their own.
"""
