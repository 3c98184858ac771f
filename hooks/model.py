"""What every part of the ShardDB spec is made of: the pydantic base and the constrained strings they share.

Apart from ``spec.py`` so that a feature's own part of the spec (``backup/spec.py``) is written beside the
feature, and ``spec.py`` imports it rather than the other way round.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

NonEmpty = Annotated[str, StringConstraints(min_length=1, strip_whitespace=False)]
# A DNS subdomain, as the names of ServiceAccounts and PriorityClasses are.
DnsName = Annotated[
    str,
    StringConstraints(
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    ),
]


def integral(value: object) -> object:
    """JSON Schema counts 3.0 as an integer, so do we; 3.5, "3" and true stay errors."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


class Spec(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, populate_by_name=True)
