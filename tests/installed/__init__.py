"""The installed tier (marker ``installed``, ``make installed``): the product installed as users install it.

The README's deploy steps on three real nodes, the hooks image and Metacontroller's as pods. A shard
with standbys goes through one disturbance per file in ``test_production_members/``, in order.
"""
