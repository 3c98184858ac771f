"""``make image``: build the hook image with whatever builder the machine has, run it, and check it serves."""
