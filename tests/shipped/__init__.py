"""What ships beside the hooks' code, as rendered and run: manifests, overlays, partitions, budgets.

The deploy manifests and the examples, the partitioned install, the write budget every overlay
carries, and the default seed, drain and flush commands run in real shells.
"""
