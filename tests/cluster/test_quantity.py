"""``hooks.quantity.canonical`` is what a real API server stores, spelling by spelling.

Quantities are written into two kinds of field and read back:

* a resource list (container ``requests``, many containers in one PodTemplate), which the
  server also rounds up to whole milli units and where negative values are refused;
* lone quantities (an HPA's ``status.currentMetrics``, whose values nothing validates), which
  keep nano precision and may be negative.

Every spelling is either a hand-written edge case or from a seeded generator, so each run
checks the same 1,700-odd spellings (and then their canonical forms) in a few dozen
requests. What the server refuses as syntax, ``canonical`` refuses too.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from hooks.quantity import MAX_MAGNITUDE, QuantityError, canonical, parse

from ..support.kube import Kube, error_message
from ..support.samples import SPEC, sharddb

Obj = dict[str, Any]
Spelling = str | int


def _words(text: str) -> list[str]:
    return text.split()


# Spellings at the edges of the syntax and of the rules, all non-negative, by theme.
EDGE_CASES: list[Spelling] = [
    *_words("0 1 100m 0.5 1.5 500m 1000m 1000 1k 128Mi 1Gi 10Gi 1024Mi 0.5Gi 1.5Gi 0Mi 0.5Ki 1Ki 1023Ki 1025Ki"),
    *_words("2048Ki 1536Mi 1e3 1E3"),
    # every suffix
    *_words("1n 1u 1m 1k 1M 1G 1T 1P 1E 1Ki 1Mi 1Gi 1Ti 1Pi 1Ei 7n 7u 7m 7k 7M 7G 7T 7P 7E 7Ki 7Mi 7Gi 7Ti 7Pi 7Ei"),
    *_words("1500k 1500000 1000k 0.001k 1024Ki 1048576Ki 2048Mi 1024Ti 1024Pi 008Ki"),
    # the e form: signs, case, zero, exponents that are multiples of three or not
    *_words("1e0 1e1 1e2 1e+3 1E-3 1e-2 1e-9 12e-1 10e3 1000e0 1.5e3 1.5e-2 2E4 1e18"),
    # signs, leading and trailing zeros, dots
    *_words("+1 +0 -0 -0.0 01 007 0100m 00.5 0.500 .500 .5 1. 1.0 1.000 1.500k 1.200k 1.001 12.345k"),
    *_words("1.Gi +1Ki 01Ki 007Ki 8Ki 0008Ki 1.0Ki 1e-0 1e00 1e+03 1E-03 +1n +1.0n +15e-9 +15e-10 +1e-3"),
    # no digits at all: zero, where the server reads the number the quick way
    *_words("- + . k m Mi Ti e3 +. -.k"),
    # rounding up: to milli in a resource list, to nano everywhere
    *_words("0.1n 1.5n 0.0001 0.0005 0.0015 1.0001 123456789n 1000u 1u 1.000001 1e-10 1.5e-10 1e-30"),
    *_words("0.000000000000000000001 0.0000000001 1.e-20 0.0000000015Ki"),
    # long digit strings: past the quick int64 reading
    *_words("123456789012345678 1234567890123456789 +123456789012345678 +1234567890123456789"),
    *_words("0000000000000000000000001 1234567890123456k 1234567890.123456789 99999999999Ki 999999999999Ki"),
    *_words("99999999Mi 999999999Mi 99999Gi 999999Gi 99Ti 999Ti +99999999999Ki +999999999999Ki +99999999Mi"),
    *_words("+999999999Mi +99999Gi +999999Gi +99Ti +999Ti +1Pi +1Ei"),
    # the largest exponents accepted
    *_words("1e-1000 0e1000 0e-1000 0.0001e-996"),
    # the largest quantities
    *_words("9223372036854775807 9223372036854775807000m 9.223372036854775807E 7.99999Ei 7Ei 8191Pi 8388607Ti"),
    "9223372036854775806999999999n",
    # binary that is or is not a whole multiple of 1024
    *_words("0.5Mi 1.5Ki 1.0000001Ki 1023 1023.5Ki .5Ei +.5Ki 1000Ki 2.9296875Ki 3000Ki 0.9765625Mi"),
    *_words("1.953125Ki 9.765625Ki 976.5625Ki 0.0009765625Ki 1.0009765625Ki"),
    # integers, which a client may send as JSON numbers
    *[0, 1, 5, 999, 1000, 1500, 1024, 10**6, 10**18, MAX_MAGNITUDE],
]

# Spellings that are not quantities to the server, as syntax.
NOT_QUANTITIES: list[Spelling] = [
    *["", "1 Gi", "\t1Gi", "1Gi\n"],
    *_words("one 1Kb 1kb 1K 1KI 1mi 1gb 1,5 1.5.5 1..5 --1 +-1 1+ 1e 1e+ 1e1.5 1ee3 1Ki3 1k2 1e3Ki 0x10 1_000"),
    *_words("Ei Pi .Pi e-20 -.e-20 \uff11 1\u0663"),
]

# Spellings the server accepts but canonical refuses on purpose, with what the server stores.
REFUSED_ON_PURPOSE: list[tuple[Spelling, str]] = [
    # above 2**63-1: the exponent is lost, or the value kept, or capped
    ("1000E", "1"),
    ("10000000000000000000000000000000000000000", "10"),
    ("12345678901234567890", "12345678901234567890"),
    ("9223372036854775808", "9223372036854775808"),
    (MAX_MAGNITUDE + 1, "9223372036854775808"),
    ("1e19", "10e18"),
    ("10E", "10E"),
    ("8Ei", "9223372036854775807"),
    # beyond MAX_EXPONENT
    ("1e1001", "100e999"),
    # the JSON decoder trims white space that JSON lets through unescaped (not a tab or a
    # newline, which reach it as escapes); ParseQuantity and CEL's isQuantity trim nothing
    (" 1Gi", "1Gi"),
    (" 1", "1"),
    ("1 ", "1"),
    ("  500m  ", "500m"),
    ("\u00a01", "1"),
]

_DECIMAL = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E"]
_BINARY = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


def generated(seed: int, count: int, *, signed: bool) -> list[str]:
    """``count`` spellings ``canonical`` accepts, drawn from the whole syntax by a seeded generator.

    ``signed`` lets negative values through; otherwise a spelling may still carry a sign
    if its value is not negative.
    """
    rng = random.Random(seed)
    found: list[str] = []
    while len(found) < count:
        text = _spelling(rng, signed)
        try:
            value = parse(text)
        except QuantityError:
            continue
        if signed or value >= 0:
            found.append(text)
    return found


def _digits(rng: random.Random, length: int) -> str:
    """``length`` random digits or so, three times in ten ending in a run of zeros."""
    text = "".join(rng.choice("0123456789") for _ in range(length))
    if text and rng.random() < 0.3:
        text = text[: -rng.randint(1, len(text))] + "0" * rng.randint(1, 4)
    return text


def _spelling(rng: random.Random, signed: bool) -> str:
    """Sign, leading zeros, digits, maybe a fraction, and any suffix; now and then a round
    number spelled in a binary suffix (``2.9296875Ki`` is 3000)."""
    sign = rng.choice(["", "", "", "", "+"] + (["-", "-"] if signed else []))
    if rng.random() < 0.1:
        return sign + _round_number_in_binary(rng)
    zeros = rng.choice(["", "", "", "", "", "", "0", "00", "0000000"])
    whole = _digits(rng, rng.choice([0, 1, 1, 1, 2, 3, 4, 6, 9, 12, 17, 18, 19]))
    fraction = rng.choice([None, None, None, "", _digits(rng, rng.choice([1, 1, 2, 3, 4, 6, 9, 12, 15]))])
    if not whole and not fraction and rng.random() < 0.9:
        whole = str(rng.randint(1, 999))
    kind = rng.random()
    if kind < 0.45:
        suffix = rng.choice(_DECIMAL)
    elif kind < 0.75:
        suffix = rng.choice(_BINARY)
    else:
        exponent = rng.randint(-30, 25)
        sign_of_exponent = "+" if exponent >= 0 and rng.random() < 0.2 else ""
        suffix = f"{rng.choice('eE')}{sign_of_exponent}{exponent}"
    number = zeros + whole + ("" if fraction is None else "." + fraction)
    return f"{sign}{number}{suffix}"


def _round_number_in_binary(rng: random.Random) -> str:
    """A whole number with trailing zeros, written exactly in Ki, Mi or Gi (often with a fraction)."""
    number = rng.randint(1, 999) * 10 ** rng.randint(0, 9)
    steps = rng.randint(1, 3)
    places = 10 * steps  # 1/1024**steps has exactly this many decimal places
    digits = str(number * 5**places).rjust(places + 1, "0")
    whole, fraction = digits[:-places], digits[-places:].rstrip("0")
    return f"{whole}.{fraction}{_BINARY[steps - 1]}" if fraction else f"{whole}{_BINARY[steps - 1]}"


def _chunks(items: list[Spelling], size: int) -> Iterator[list[Spelling]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


RESOURCE_NAMES = ("cpu", "memory", "ephemeral-storage")
PER_TEMPLATE = 300  # spellings per PodTemplate: 100 containers of three requests
PER_HPA = 300  # spellings per HPA status: 150 metrics of two values


def stored_in_resource_lists(kube: Kube, namespace: str, spellings: list[Spelling]) -> list[str]:
    """Write the spellings as container requests of PodTemplates and read back what was stored."""
    stored: list[str] = []
    for number, chunk in enumerate(_chunks(spellings, PER_TEMPLATE)):
        containers = []
        for index, start in enumerate(range(0, len(chunk), len(RESOURCE_NAMES))):
            values = chunk[start : start + len(RESOURCE_NAMES)]
            requests = dict(zip(RESOURCE_NAMES, values, strict=False))
            containers.append({"name": f"c{index}", "image": "example.invalid/q", "resources": {"requests": requests}})
        name = f"quantities-{number}"
        template = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "template": {"spec": {"containers": containers}},
        }
        response = kube.create(template)
        assert response.status_code == 201, error_message(response)
        for container in kube.get("PodTemplate", name, namespace)["template"]["spec"]["containers"]:
            requests = container["resources"]["requests"]
            stored.extend(requests[resource] for resource in RESOURCE_NAMES if resource in requests)
    return stored


def stored_as_lone_quantities(kube: Kube, namespace: str, spellings: list[Spelling]) -> list[str]:
    """Write the spellings as HPA metric values (status, unvalidated) and read back what was stored."""
    stored: list[str] = []
    for number, chunk in enumerate(_chunks(spellings, PER_HPA)):
        name = f"quantities-{number}"
        hpa = {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}, "maxReplicas": 1},
        }
        response = kube.create(hpa)
        assert response.status_code == 201, error_message(response)
        metrics = []
        for index, start in enumerate(range(0, len(chunk), 2)):
            current = dict(zip(("value", "averageValue"), chunk[start : start + 2], strict=False))
            metrics.append({"type": "External", "external": {"metric": {"name": f"m{index}"}, "current": current}})
        status = {"currentReplicas": 0, "desiredReplicas": 0, "currentMetrics": metrics}
        response = kube.merge_patch("HorizontalPodAutoscaler", name, namespace, {"status": status}, "status")
        assert response.status_code == 200, error_message(response)
        for metric in kube.get("HorizontalPodAutoscaler", name, namespace)["status"]["currentMetrics"]:
            current = metric["external"]["current"]
            stored.extend(current[key] for key in ("value", "averageValue") if key in current)
    return stored


def _mismatches(spellings: list[Spelling], stored: list[str], *, resource_list: bool) -> list[str]:
    assert len(stored) == len(spellings)
    return [
        f"{spelling!r}: server {server!r}, canonical {canonical(spelling, resource_list=resource_list)!r}"
        for spelling, server in zip(spellings, stored, strict=True)
        if canonical(spelling, resource_list=resource_list) != server
    ]


def _negated(spelling: Spelling) -> Spelling:
    if isinstance(spelling, int):
        return -spelling
    return spelling if spelling.startswith(("+", "-")) else f"-{spelling}"


UNSIGNED: list[Spelling] = list(dict.fromkeys([*EDGE_CASES, *generated(seed=20250601, count=600, signed=False)]))
SIGNED: list[Spelling] = list(
    dict.fromkeys([*EDGE_CASES, *(_negated(s) for s in EDGE_CASES), *generated(seed=20250602, count=600, signed=True)])
)


def test_resource_lists_store_the_canonical_spelling(kube: Kube, namespace: str) -> None:
    stored = stored_in_resource_lists(kube, namespace, UNSIGNED)
    assert _mismatches(UNSIGNED, stored, resource_list=True) == []


def test_lone_quantities_store_the_canonical_spelling(kube: Kube, namespace: str) -> None:
    stored = stored_as_lone_quantities(kube, namespace, SIGNED)
    assert _mismatches(SIGNED, stored, resource_list=False) == []


def test_the_canonical_spelling_is_stored_unchanged(kube: Kube, namespace: str) -> None:
    """What a hook renders is what the server keeps, so Metacontroller has nothing to update."""
    in_lists: list[Spelling] = sorted({canonical(s) for s in UNSIGNED})
    alone: list[Spelling] = sorted({canonical(s, resource_list=False) for s in SIGNED})
    assert stored_in_resource_lists(kube, namespace, in_lists) == in_lists
    assert stored_as_lone_quantities(kube, namespace, alone) == alone


def test_what_the_server_refuses_as_syntax_canonical_refuses(kube: Kube, namespace: str) -> None:
    assert {s: v for s, v in _stored_one_by_one(kube, namespace, NOT_QUANTITIES).items() if v is not None} == {}
    assert [s for s in NOT_QUANTITIES if _accepted(s)] == []


def test_canonical_refuses_on_purpose_what_the_server_mangles_or_barely_accepts(kube: Kube, namespace: str) -> None:
    spellings = [spelling for spelling, _ in REFUSED_ON_PURPOSE]
    assert _stored_one_by_one(kube, namespace, spellings) == dict(REFUSED_ON_PURPOSE)
    assert [s for s in spellings if _accepted(s)] == []


@pytest.mark.parametrize("size", [" 1Gi", "1Gi ", "\u00a01Gi"])
def test_the_sharddb_crd_refuses_white_space_around_a_storage_size_as_canonical_does(
    kube: Kube, namespace: str, size: str
) -> None:
    response = kube.create(sharddb("spaced", namespace, {**SPEC, "storage": {"size": size}}))
    assert response.status_code == 422, error_message(response)
    assert "spec.storage.size must be a positive Kubernetes quantity" in error_message(response)
    assert not _accepted(size)


def _accepted(spelling: Spelling) -> bool:
    try:
        canonical(spelling)
    except QuantityError:
        return False
    return True


def _stored_one_by_one(kube: Kube, namespace: str, spellings: list[Spelling]) -> dict[Spelling, str | None]:
    """One PodTemplate per spelling, as a memory request: what was stored, or None if refused as syntax."""
    stored: dict[Spelling, str | None] = {}
    for index, spelling in enumerate(spellings):
        name = f"one-{index}"
        container = {"name": "c", "image": "example.invalid/q", "resources": {"requests": {"memory": spelling}}}
        template = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "template": {"spec": {"containers": [container]}},
        }
        response = kube.create(template)
        if response.status_code == 400:
            assert "quantit" in error_message(response), error_message(response)
            stored[spelling] = None
            continue
        assert response.status_code == 201, error_message(response)
        containers = kube.get("PodTemplate", name, namespace)["template"]["spec"]["containers"]
        stored[spelling] = containers[0]["resources"]["requests"]["memory"]
    return stored
