"""A Metacontroller-like loop and a simulated cluster around a real API server, for ``bench.fleet``."""
