"""A Dockerfile read as its instructions, in order: how the official recipes' images are compared with ours.

Shared by the test images' tests and the product images' (``tests/testbed/``).
"""

from __future__ import annotations

import re


def dockerfile(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, with continuation lines joined and comment lines dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    found = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def last(instructions: list[tuple[str, str]], name: str) -> str:
    return [rest for word, rest in instructions if word == name][-1]
