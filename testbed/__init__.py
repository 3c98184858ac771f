"""What the tests, the benchmarks and the tools run the hooks on: real parts, images, stand-ins and models.

Real parts (``real/``) are built here and started by the tests (the control plane, real nodes in
namespaces of their own, Metacontroller); images (``images/``) are written from Debian packages;
stand-ins (``standins/``: the node agent, canned answers) do a real part's API work where it cannot
fit on 2 cores; models (``models/``: Metacontroller's update decision, the world that builds its
requests) serve the fast tiers, each held to the real part by a test; ``faults/`` holds the fault
campaign's faults, history and invariants. ``stack`` assembles the real parts and the stand-ins.
``testbed/README.md`` says which module is which. Nothing here imports ``tests``, ``bench`` or
``tools`` (``tests/tree/test_imports.py`` checks it).
"""
