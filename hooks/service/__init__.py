"""The HTTP service around the decision: routes, settings, authentication, ETags, health, logs, metrics, serving.

Everything above this package (``hooks/*.py``) decides and renders without HTTP and
never imports it; ``hooks.handler`` is the one seam this package calls.
"""
