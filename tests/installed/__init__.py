"""The installed tier (marker ``installed``, ``make installed``): the product installed as users install it.

The README's deploy steps on three real nodes, the hooks image and Metacontroller's as pods.
"""
