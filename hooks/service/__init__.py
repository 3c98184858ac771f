"""The HTTP service around the decision: routes, settings, authentication, ETags, health, logs, metrics, serving.

The rest of ``hooks/`` decides and renders without HTTP and never imports it; ``hooks.handler``
is the one seam this package calls, and ``refusals`` chooses the HTTP status of what it refuses.
"""
