"""The test bed and the tests' own tooling, without a stack: stand-ins, faults, images, evidence.

The stand-in node agent, the audit log's reader, the fault campaign's invariants, the images'
parts that need no build, the machine check, the sandbox's host check, and the evidence a
failing test keeps.
"""
