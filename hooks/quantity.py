"""Kubernetes resource quantities, spelled exactly as the API server stores them.

Metacontroller updates a child whenever the desired object differs from the stored one,
and the API server rewrites every ``resource.Quantity`` into a spelling of its own
(``0.5`` is stored as ``500m``, ``1024Mi`` as ``1Gi``). Hooks that render
:func:`canonical` spellings compare equal to what they read back, so nothing is rewritten
on every sync. ``tests/cluster/test_quantity.py`` holds these rules against a real
kube-apiserver:

* Text is an optional sign, digits with an optional ``.``, and one suffix: decimal SI
  (``n u m k M G T P E`` or none), binary SI (``Ki Mi Gi Ti Pi Ei``) or a decimal
  exponent (``e3``, ``E-6``). The digits may be left out (``k`` is zero) unless the
  server has to read the number the long way (see ``_quick``).
* A non-zero value is rounded away from zero to a whole number of nano units, and in a
  resource list (``requests``, ``limits``, ``storage``) on to whole milli units.
* Binary values are shown with the largest binary suffix that keeps the mantissa whole;
  one that is not a whole multiple of 1024 is shown in decimal SI (``2.9296875Ki`` is
  stored as ``3k``, ``0.5Ki`` as ``512``).
* Decimal values are shown as a whole mantissa without trailing zeros and an exponent
  lowered to a multiple of 3, with the SI suffix or the ``e`` form the text used.
* The server keeps the text as written when a cheap test calls it canonical already
  (``_kept``), so ``+1``, ``01`` and ``1.500k`` are stored as they are.

Some refusals go beyond the server's syntax, so that a hook never passes on what the
server would mangle or choke on: magnitudes above 2**63-1, the largest quantity
Kubernetes documents (the server stores ``1000E`` as ``1``), exponents beyond
``MAX_EXPONENT`` and text longer than ``MAX_LENGTH``. Surrounding white space is refused
as ``ParseQuantity`` and CEL's ``isQuantity`` refuse it, although the JSON decoder of
built-in kinds trims spaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction
from typing import Final

__all__ = ["MAX_EXPONENT", "MAX_LENGTH", "MAX_MAGNITUDE", "QuantityError", "canonical", "parse"]

MAX_MAGNITUDE: Final = 2**63 - 1
"""The largest magnitude Kubernetes documents for a quantity."""

MAX_EXPONENT: Final = 1000
"""The largest ``e`` exponent accepted, in magnitude: far past any real quantity. The server
takes seconds to store ``1e10000000``, and longer still near the int32 limit."""

MAX_LENGTH: Final = 256
"""The longest text accepted: far longer than any real quantity, and it bounds the work."""


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity; the message says what is wrong with it."""


class _Format(Enum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_DECIMAL_SUFFIXES: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_NAMES: Final = {exponent: name for name, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_NAMES: Final = {exponent: name for name, exponent in _BINARY_SUFFIXES.items()}

# Sign, whole digits, fraction digits, then the suffix: letters of the suffix alphabet,
# and an optional sign and digits (the exponent of the ``e`` form).
_SYNTAX: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)", re.ASCII)
_EXPONENT: Final = re.compile(r"[eE]([+-]?[0-9]+)", re.ASCII)

_NANO: Final = -9  # the finest unit of any quantity, 1n
_MILLI: Final = -3  # the finest unit of a quantity in a resource list, 1m
_QUICK_DIGITS: Final = 18  # significant digits the server reads straight into an int64
_QUICK_BINARY_DIGITS: Final = 14  # digits plus 3 per binary step, read straight into an int64


@dataclass(frozen=True)
class _Parsed:
    """What the server makes of a spelling: coefficient * 10**exponent, a format, maybe the text."""

    coefficient: int
    exponent: int
    format: _Format
    text: str | None  # the spelling as written, when the server stores it unchanged


def _suffix(text: str, suffix: str) -> tuple[int, int, _Format]:
    """(base, power, format) of a suffix; the SI names win over the ``e`` form (``1E`` is exa)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], _Format.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], _Format.BINARY_SI
    match = _EXPONENT.fullmatch(suffix)
    if match is None:
        raise QuantityError(
            f"{text!r} is not a quantity: unknown suffix {suffix!r} "
            "(use n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3)"
        )
    power = int(match.group(1))
    if abs(power) > MAX_EXPONENT:
        raise QuantityError(f"{text!r} is refused: its exponent is beyond ±{MAX_EXPONENT}")
    return 10, power, _Format.DECIMAL_EXPONENT


def _quick(digits: str, fraction: str, power: int, fmt: _Format) -> bool:
    """Whether the server reads the number straight into an int64, keeping it exact.

    Only then may it keep the text as written, and only then may the digits be left out.
    """
    if fmt is _Format.BINARY_SI:
        return fraction == "" and len(digits) + power * 3 // 10 <= _QUICK_BINARY_DIGITS
    return len(digits) + len(fraction) <= _QUICK_DIGITS and power - len(fraction) >= _NANO


def _kept(digits: str, scale: int, fmt: _Format, finest: int) -> bool:
    """The server's test for "already canonical", under which it stores the text unchanged.

    ``digits`` are the significant digits, leading zeros of the whole part dropped, and
    ``scale`` is the power of ten of the last one. A resource list rounds anything finer
    than ``finest``, and rounding forgets the text.
    """
    if fmt is _Format.BINARY_SI:
        return int(digits) % 8 != 0
    return scale >= finest and scale % 3 == 0 and not digits.endswith("000") and not digits.startswith("0")


def _round_up(coefficient: int, exponent: int, finest: int) -> tuple[int, int]:
    """Round a non-zero magnitude away from zero to whole units of 10**finest."""
    if coefficient == 0 or exponent >= finest:
        return coefficient, exponent
    shift = finest - exponent
    magnitude = abs(coefficient)
    rounded = 1 if shift >= len(str(magnitude)) else -(-magnitude // 10**shift)
    return (rounded if coefficient > 0 else -rounded), finest


def _too_big(coefficient: int, exponent: int) -> bool:
    """Whether ``coefficient * 10**exponent`` is above :data:`MAX_MAGNITUDE` in magnitude."""
    magnitude = abs(coefficient)
    width = len(str(magnitude)) + exponent  # the value is below 10**width, and at least 10**(width-1)
    if width <= 18 or magnitude == 0:
        return False
    if width >= 21:
        return True
    scale: int = 10 ** abs(exponent)
    return magnitude * scale > MAX_MAGNITUDE if exponent >= 0 else magnitude > MAX_MAGNITUDE * scale


def _parse(value: str | int, finest: int) -> _Parsed:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise QuantityError(f"{value!r} is not a quantity: expected a string or an integer")
    if isinstance(value, int) and abs(value) > MAX_MAGNITUDE:  # before str(), which refuses huge integers
        raise QuantityError(f"a {value.bit_length()}-bit integer is refused: quantities are at most {MAX_MAGNITUDE}")
    text = str(value)
    if len(text) > MAX_LENGTH:
        raise QuantityError(f"{text[:20]!r}... is refused: a quantity is at most {MAX_LENGTH} characters")
    if text != text.strip():
        raise QuantityError(f"{text!r} is not a quantity: it has surrounding whitespace")
    match = _SYNTAX.fullmatch(text)
    if text == "" or match is None:
        raise QuantityError(
            f"{text!r} is not a quantity: expected a number and a suffix, such as 500m, 1.5, 2Gi or 1e3"
        )
    sign, whole, fraction, suffix = match.groups()
    fraction = fraction or ""
    base, power, fmt = _suffix(text, suffix)
    digits = whole.lstrip("0") or "0"
    quick = _quick(digits, fraction, power, fmt)
    if not quick and whole == "" and fraction == "":
        raise QuantityError(f"{text!r} is not a quantity: the number has no digits")

    coefficient = int(digits + fraction) * (2**power if base == 2 else 1)
    exponent = (power if base == 10 else 0) - len(fraction)
    if sign == "-":
        coefficient = -coefficient
    if _too_big(coefficient, exponent):
        raise QuantityError(f"{text!r} is refused: quantities are at most {MAX_MAGNITUDE} (2**63-1) in magnitude")
    scale = exponent if base == 10 else 0
    kept = text if quick and _kept(digits + fraction, scale, fmt, finest) else None
    coefficient, exponent = _round_up(coefficient, exponent, finest)
    return _Parsed(coefficient, exponent, fmt, kept)


def _finest(resource_list: bool) -> int:
    return _MILLI if resource_list else _NANO


def parse(value: str | int, *, resource_list: bool = True) -> Fraction:
    """The exact value the API server stores for a quantity, to compare quantities by value.

    ``resource_list`` as for :func:`canonical`.
    """
    parsed = _parse(value, _finest(resource_list))
    return parsed.coefficient * Fraction(10) ** parsed.exponent


def _decimal(coefficient: int, exponent: int, fmt: _Format) -> str:
    """A whole mantissa without trailing zeros, and an exponent lowered to a multiple of 3."""
    while coefficient % 10 == 0:
        coefficient //= 10
        exponent += 1
    lowered = exponent - exponent % 3
    mantissa = coefficient * 10 ** (exponent - lowered)
    if fmt is _Format.DECIMAL_EXPONENT:
        return f"{mantissa}e{lowered}" if lowered else str(mantissa)
    return f"{mantissa}{_DECIMAL_NAMES[lowered]}"


def _binary(number: int) -> str:
    """A whole multiple of 1024 with the largest binary suffix that keeps the mantissa whole."""
    power = 0
    while number % 1024 == 0 and power < 60:
        number //= 1024
        power += 10
    return f"{number}{_BINARY_NAMES[power]}" if power else str(number)


def canonical(value: str | int, *, resource_list: bool = True) -> str:
    """The spelling the API server stores for ``value``; :class:`QuantityError` if it is none.

    ``resource_list``: the quantity sits in a resource list (container ``requests`` and
    ``limits``, a claim's ``storage``), which the server rounds up to whole milli units;
    pass ``False`` for a lone quantity field such as ``emptyDir.sizeLimit``.
    """
    parsed = _parse(value, _finest(resource_list))
    if parsed.text is not None:
        return parsed.text
    coefficient, exponent = parsed.coefficient, parsed.exponent
    if coefficient == 0:
        return "0"
    if parsed.format is _Format.BINARY_SI:
        scale: int = 10 ** abs(exponent)
        whole, rest = (coefficient * scale, 0) if exponent >= 0 else divmod(coefficient, scale)
        if rest == 0 and whole % 1024 == 0:
            return _binary(whole)
        return _decimal(coefficient, exponent, _Format.DECIMAL_SI)
    return _decimal(coefficient, exponent, parsed.format)
