"""The command line, the hooks' second edge beside the HTTP service: ``python -m hooks render`` (``preview``).

Like ``hooks/service/``, it calls the decision through ``hooks.handler`` and is never imported by it.
"""
