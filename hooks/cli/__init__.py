"""The command line, the hooks' second edge beside the HTTP service (``python -m hooks render``): it calls
the decision through ``hooks.handler`` and nothing in the decision imports it.
"""
