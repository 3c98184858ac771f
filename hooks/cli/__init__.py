"""The command line, the hooks' second edge beside the HTTP service (``python -m hooks render``): it calls
the decision through ``hooks.handler`` and nothing in the decision imports it. Its model of the cluster around a
ShardDB (``world``) is the test bed's too, so the preview and the tests cannot drift apart.
"""
