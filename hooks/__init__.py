"""ShardDB lifecycle hooks for Metacontroller's CompositeController."""

__version__ = "0.1.0"
