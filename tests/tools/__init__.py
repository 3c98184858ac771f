"""The tools and benchmarks: ``make test``'s runner, ``make soak``, ``make image``, ``make crd``, ``make help``.

What each tool asks and reads, on fakes; a one-second benchmark run; the change-latency arithmetic.
"""
