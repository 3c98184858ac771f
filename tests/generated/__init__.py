"""Generated worlds: Hypothesis properties, random event orders (a state machine) and fuzzed requests.

Every world, not one: the design rules, determinism and the fixed point over generated observed
worlds, and hostile input against the live server.
"""
