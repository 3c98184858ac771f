"""The hooks as a service: what goes over the wire, on a real uvicorn server and over the ASGI app.

Whole lives answer by answer, bad input, health, metrics, ETags, logs, limits, auth, TLS, shutdown,
settings, and the offline preview (``python -m hooks render``), the other edge.
"""
