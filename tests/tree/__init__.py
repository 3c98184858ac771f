"""The repository's shape: which folder may import which, the tests' own map, and a bare clone.

The import floors (``hooks`` at the bottom, no import back up, one client of the API server), the
tests' layout (no test imports a test, no conftest another), and the fast tier in a clone with
nothing beside it.
"""
