"""The data tier (marker ``data``, ``make data``): the real stack on a real node, running the examples' databases.

PostgreSQL, Redis, MariaDB and memcached in real containers, with the default commands; inside
namespaces of its own (``testbed/real/sandbox.py``), so only as root.
"""
