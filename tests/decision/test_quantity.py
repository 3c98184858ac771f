"""``hooks.quantity``: the spelling the API server stores for a quantity, as a specification.

Every stored spelling in these tables is what a real kube-apiserver stored, and every
refused syntax one it refused: ``tests/cluster/test_quantity.py`` writes the same spellings,
and many generated ones, to one. Refusals beyond the syntax (too big, too long, whitespace)
are this module's choice; that test also shows what the server does with them.
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks.quantity import MAX_EXPONENT, MAX_LENGTH, MAX_MAGNITUDE, QuantityError, canonical, parse


def _table(pairs: str) -> list[tuple[str, str]]:
    """``spelling=stored`` pairs separated by spaces."""
    return [(spelling, stored) for spelling, _, stored in (pair.partition("=") for pair in pairs.split())]


@pytest.mark.parametrize(
    ("spelling", "stored"),
    _table("0.5=500m 1000m=1 1000=1k 1024Mi=1Gi 0.5Gi=512Mi 1.5Gi=1536Mi 0Mi=0 0.5Ki=512 1Gi=1Gi 100m=100m"),
)
def test_common_spellings_are_stored_in_kubernetes_own_spelling(spelling: str, stored: str) -> None:
    assert canonical(spelling) == stored


@pytest.mark.parametrize(
    ("spelling", "stored"),
    _table("1n=1m 1u=1m 1m=1m 1=1 1k=1k 1M=1M 1G=1G 1T=1T 1P=1P 1E=1E 1500k=1500k 1500000=1500k 0.001k=1"),
)
def test_decimal_si_suffixes_move_to_the_largest_whole_multiple_of_a_thousand(spelling: str, stored: str) -> None:
    assert canonical(spelling) == stored


@pytest.mark.parametrize(
    ("spelling", "stored"),
    _table(
        "1Ki=1Ki 1024Ki=1Mi 1048576Ki=1Gi 2048Mi=2Gi 1536Mi=1536Mi 1024Ti=1Pi 1024Pi=1Ei 7Ei=7Ei 8Ki=8Ki"
        " 1000Ki=1000Ki 0.9765625Mi=1000Ki 1.Gi=1.Gi"
    ),
)
def test_binary_suffixes_move_to_the_largest_that_keeps_the_mantissa_whole(spelling: str, stored: str) -> None:
    assert canonical(spelling) == stored


@pytest.mark.parametrize(
    ("spelling", "stored"),
    _table("0.5Ki=512 1.5Ki=1536 2.9296875Ki=3k 976.5625Ki=1M 1023.5Ki=1048064 1.0000001Ki=1024001m 0.0000000015Ki=1m"),
)
def test_binary_values_that_are_not_whole_multiples_of_1024_are_stored_in_decimal_si(
    spelling: str, stored: str
) -> None:
    assert canonical(spelling) == stored


@pytest.mark.parametrize(
    ("spelling", "stored"), _table("1000e0=1e3 1e1=10 1e2=100 12e-1=1200e-3 1e-2=10e-3 1.5e3=1500 1e+3=1e+3 1e18=1e18")
)
def test_the_e_form_keeps_its_form_with_an_exponent_that_is_a_multiple_of_three(spelling: str, stored: str) -> None:
    assert canonical(spelling) == stored


def test_a_capital_e_alone_is_exa_and_with_digits_an_exponent() -> None:
    assert (canonical("2E"), canonical("2E3"), canonical("2E4")) == ("2E", "2E3", "20e3")


@pytest.mark.parametrize(
    "spelling", ["+1", "01", "007", "0100m", "1.500k", "1.001", "12.345k", "1.", "+1Ki", "01Ki", "007Ki", "1E3", "1e+3"]
)
def test_text_that_passes_the_servers_quick_canonical_test_is_stored_as_written(spelling: str) -> None:
    assert canonical(spelling) == spelling


@pytest.mark.parametrize(
    ("spelling", "stored"),
    _table("+0=0 -0=0 0.500=500m .500=500m 1.000=1 008Ki=8Ki 1000k=1M 00=0 +1234567890123456789=1234567890123456789"),
)
def test_text_that_fails_the_quick_test_is_rewritten(spelling: str, stored: str) -> None:
    assert canonical(spelling) == stored


@pytest.mark.parametrize("spelling", ["-", "+", ".", "k", "m", "Mi", "Ti", "e3", "+.", "-.k"])
def test_a_number_without_digits_is_zero_where_the_server_reads_it_the_quick_way(spelling: str) -> None:
    assert canonical(spelling) == "0"


@pytest.mark.parametrize("spelling", ["Ei", "Pi", ".Pi", "e-20", "-.e-20"])
def test_a_number_without_digits_is_refused_where_the_server_reads_it_the_long_way(spelling: str) -> None:
    with pytest.raises(QuantityError, match="no digits"):
        canonical(spelling)


@pytest.mark.parametrize(
    ("spelling", "in_list", "alone"),
    [
        ("0.1n", "1m", "1n"),
        ("1.5n", "1m", "2n"),
        ("1u", "1m", "1u"),
        ("1.000001", "1001m", "1.000001"),
        ("123456789n", "124m", "123456789n"),
        ("1e-10", "1e-3", "1e-9"),
        ("1.5e-10", "1e-3", "1e-9"),
        ("0.000000000000000000001", "1m", "1n"),
        ("-1.5n", "-1m", "-2n"),
        ("-0.0000000001", "-1m", "-1n"),
    ],
)
def test_non_zero_values_round_away_from_zero_to_milli_in_resource_lists_and_nano_alone(
    spelling: str, in_list: str, alone: str
) -> None:
    assert (canonical(spelling), canonical(spelling, resource_list=False)) == (in_list, alone)


@pytest.mark.parametrize(
    ("spelling", "stored"), _table("-0.5=-500m -1024Mi=-1Gi -1.5Gi=-1536Mi -0.5Ki=-512 -1000=-1k -1e3=-1e3")
)
def test_negative_values_follow_the_same_rules(spelling: str, stored: str) -> None:
    assert canonical(spelling) == stored


@pytest.mark.parametrize(("number", "stored"), [(0, "0"), (1, "1"), (1000, "1k"), (1500, "1500"), (-2000, "-2k")])
def test_integers_are_read_as_their_decimal_text(number: int, stored: str) -> None:
    assert canonical(number) == stored


@pytest.mark.parametrize(
    "spelling",
    [
        "",
        "one",
        "1Kb",
        "1K",
        "1KI",
        "1mi",
        "1,5",
        "1.5.5",
        "1..5",
        "--1",
        "+-1",
        "1+",
        "1e",
        "1e+",
        "1e1.5",
        "1ee3",
        "1Ki3",
        "1k2",
        "1e3Ki",
        "0x10",
        "1_000",
        "\uff11",
        "1\u0663",
    ],
)
def test_text_that_is_not_a_quantity_is_refused(spelling: str) -> None:
    with pytest.raises(QuantityError, match="not a quantity"):
        canonical(spelling)


@pytest.mark.parametrize("spelling", [" 1", "1 ", "\t1Gi", "1Gi\n"])
def test_surrounding_whitespace_is_refused_as_parse_quantity_refuses_it(spelling: str) -> None:
    with pytest.raises(QuantityError, match="whitespace"):
        canonical(spelling)


@pytest.mark.parametrize("spelling", ["9223372036854775808", "8Ei", "1e19", "10E", "1000E", "-8Ei", MAX_MAGNITUDE + 1])
def test_magnitudes_above_2_to_the_63_minus_1_are_refused(spelling: str | int) -> None:
    with pytest.raises(QuantityError, match="at most 9223372036854775807"):
        canonical(spelling)


def test_an_integer_too_big_to_print_is_refused_as_too_big() -> None:
    with pytest.raises(QuantityError, match="16610-bit integer is refused"):
        canonical(10**5000)


@pytest.mark.parametrize("spelling", ["9223372036854775807", "-9223372036854775807", "7.99999Ei", "8191Pi"])
def test_magnitudes_up_to_2_to_the_63_minus_1_are_accepted(spelling: str) -> None:
    assert parse(spelling) <= MAX_MAGNITUDE


def test_exponents_beyond_the_limit_are_refused_even_for_zero() -> None:
    assert canonical(f"0e{MAX_EXPONENT}") == "0"
    assert canonical(f"1e-{MAX_EXPONENT}", resource_list=False) == "1e-9"
    for spelling in (f"0e{MAX_EXPONENT + 1}", f"1e-{MAX_EXPONENT + 1}", "1e2147483647"):
        with pytest.raises(QuantityError, match="exponent"):
            canonical(spelling)


def test_text_longer_than_the_limit_is_refused() -> None:
    assert canonical("0" * (MAX_LENGTH - 1) + "1") == "0" * (MAX_LENGTH - 1) + "1"
    with pytest.raises(QuantityError, match="characters"):
        canonical("0" * MAX_LENGTH + "1")


@pytest.mark.parametrize("value", [True, 1.5, None, b"1"])
def test_values_that_are_neither_text_nor_integers_are_refused(value: object) -> None:
    with pytest.raises(QuantityError):
        canonical(value)  # type: ignore[arg-type]


def test_a_quantity_error_is_a_value_error_that_quotes_the_text() -> None:
    with pytest.raises(ValueError, match="'12 parsecs'"):
        canonical("12 parsecs")


@pytest.mark.parametrize(
    ("spelling", "value"),
    [("1.5Gi", Fraction(3 * 2**29)), ("500m", Fraction(1, 2)), ("1n", Fraction(1, 1000)), ("-1k", Fraction(-1000))],
)
def test_parse_gives_the_stored_value(spelling: str, value: Fraction) -> None:
    assert parse(spelling) == value


def test_parse_alone_keeps_nano_precision() -> None:
    assert parse("1.5n", resource_list=False) == Fraction(2, 10**9)


# --- properties over the whole syntax -------------------------------------------------

_SUFFIXES = st.sampled_from(
    ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
) | st.builds("{}{}{}".format, st.sampled_from("eE"), st.sampled_from(["", "+", "-"]), st.integers(0, 40).map(str))
_UNSIGNED = st.builds(
    "{}{}{}".format,
    st.from_regex(r"[0-9]{0,22}", fullmatch=True),
    st.none().map(lambda _: "") | st.from_regex(r"\.[0-9]{0,14}", fullmatch=True),
    _SUFFIXES,
)
_SPELLINGS = st.builds("{}{}".format, st.sampled_from(["", "+", "-"]), _UNSIGNED)


def _accepted(spelling: str) -> bool:
    try:
        canonical(spelling)
    except QuantityError:
        return False
    return True


@given(_SPELLINGS.filter(_accepted), st.booleans())
def test_the_stored_spelling_is_stored_as_it_is(spelling: str, resource_list: bool) -> None:
    once = canonical(spelling, resource_list=resource_list)
    assert canonical(once, resource_list=resource_list) == once


@given(_SPELLINGS.filter(_accepted), st.booleans())
def test_the_stored_spelling_has_the_stored_value(spelling: str, resource_list: bool) -> None:
    once = canonical(spelling, resource_list=resource_list)
    assert parse(once, resource_list=resource_list) == parse(spelling, resource_list=resource_list)


@given(_UNSIGNED.filter(_accepted), st.booleans())
def test_a_minus_sign_negates_the_stored_spelling(spelling: str, resource_list: bool) -> None:
    positive = canonical(spelling, resource_list=resource_list)
    expected = "0" if positive == "0" else f"-{positive}"
    assert canonical(f"-{spelling}", resource_list=resource_list) == expected


@given(st.integers(-MAX_MAGNITUDE, MAX_MAGNITUDE))
def test_an_integer_is_stored_as_its_text_would_be(number: int) -> None:
    assert canonical(number) == canonical(str(number))


@given(st.text(alphabet=st.sampled_from("0123456789.+-eEinumkKMGTP \t"), max_size=30) | st.text(max_size=30))
def test_any_text_gives_a_spelling_or_a_quantity_error(text: str) -> None:
    if _accepted(text):
        stored = canonical(text)
        assert canonical(stored) == stored
    else:
        with pytest.raises(QuantityError, match=re.escape(repr(text))):
            canonical(text)
