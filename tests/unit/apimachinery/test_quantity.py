"""resource.Quantity: parsing, the canonical string kube stores, comparison, arithmetic, values.

Cases from k8s.io/apimachinery/pkg/api/resource/quantity_test.go unless noted.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from fleetplane.apimachinery.quantity import (
    QUANTITY_PATTERN,
    Format,
    Quantity,
    QuantityError,
    canonical_quantity,
    int_value,
    milli_value,
    parse_quantity,
)


@pytest.mark.parametrize(("text", "number", "fmt"), [
    ("0", 0, Format.DECIMAL_SI),
    ("0Ki", 0, Format.BINARY_SI),
    ("1Ki", 1024, Format.BINARY_SI),
    ("7Mi", 7 * 2**20, Format.BINARY_SI),
    ("3Ei", 3 * 2**60, Format.BINARY_SI),
    ("5n", Fraction(5, 10**9), Format.DECIMAL_SI),
    ("4u", Fraction(4, 10**6), Format.DECIMAL_SI),
    ("3m", Fraction(3, 1000), Format.DECIMAL_SI),
    ("50k", 50_000, Format.DECIMAL_SI),
    ("1E", 10**18, Format.DECIMAL_SI),
    ("1E-3", Fraction(1, 1000), Format.DECIMAL_EXPONENT),
    ("1e3", 1000, Format.DECIMAL_EXPONENT),
    ("1.3E+6", 1_300_000, Format.DECIMAL_EXPONENT),
    ("100.035k", 100_035, Format.DECIMAL_SI),
    ("0.0005k", Fraction(1, 2), Format.DECIMAL_SI),
    ("0.5e-2", Fraction(5, 1000), Format.DECIMAL_EXPONENT),
    ("6.987654321G", 6_987_654_321, Format.DECIMAL_SI),
    ("100.035Ki", Fraction(10243584, 100), Format.BINARY_SI),
    (".001", Fraction(1, 1000), Format.DECIMAL_SI),
    ("1.", 1, Format.DECIMAL_SI),
    ("1.G", 10**9, Format.DECIMAL_SI),
    ("+1Ki", 1024, Format.BINARY_SI),
])
def test_parse(text, number, fmt):
    q = Quantity.parse(text)
    assert q.number == number
    assert q.format is fmt


@pytest.mark.parametrize(("text", "nanos"), [
    ("3.001n", 4),
    ("1.1E-9", 2),
    ("0.0000000001", 1),
    ("0.5e-9", 1),
    ("0.9n", 1),
    ("0.00000012345", 124),
    ("0.000000000001Ki", 2),
    ("-0.0000000001", -1),  # rounded away from zero, as kube
])
def test_precision_beyond_nano_rounds_up(text, nanos):
    assert Quantity.parse(text).number == Fraction(nanos, 10**9)


@pytest.mark.parametrize("text", [
    "", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ", ".", "1Ki ",
])
def test_malformed_is_kubes_error(text):
    with pytest.raises(QuantityError) as err:
        Quantity.parse(text)
    assert str(err.value) == f"quantities must match the regular expression '{QUANTITY_PATTERN}'"
    assert QUANTITY_PATTERN == "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def test_json_numbers_parse_but_not_other_types():
    assert str(Quantity.parse(2)) == "2"
    assert str(Quantity.parse(0.5)) == "500m"
    assert str(Quantity.parse(1e-07)) == "100e-9"  # Python writes 1e-07: an exponent
    for bad in (True, None, [], {}):
        with pytest.raises(QuantityError):
            Quantity.parse(bad)


@pytest.mark.parametrize(("text", "canonical"), [
    # TestQuantityString, written the way a user would
    ("1024Mi", "1Gi"),
    ("307200Ki", "300Mi"),
    ("6Ki", "6Ki"),
    ("1025024Mi", "1001Gi"),
    ("1024Gi", "1Ti"),
    ("5Ki", "5Ki"),
    ("1000M", "1G"),
    ("0.001T", "1G"),
    ("1000000k", "1G"),
    ("1000000000", "1G"),
    ("1000u", "1m"),
    ("80m", "80m"),
    ("1.08", "1080m"),
    ("1080000000n", "1080m"),
    ("300M", "300M"),
    ("1T", "1T"),
    ("1E", "1E"),
    ("1234567M", "1234567M"),
    ("3k", "3k"),
    ("1025", "1025"),
    ("0", "0"),
    ("0Ki", "0"),
    (".001e12", "1e9"),
    ("0.001e0", "1e-3"),
    ("1000e-12", "1e-9"),
    ("80e-3", "80e-3"),
    ("300e6", "300e6"),
    ("00", "0"),
    ("1080n", "1080n"),
    ("1080u", "1080u"),
    # TestQuantityParseEmit
    (".001Ki", "1024m"),
    (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"),
    # below 1024 or fractional, a binary quantity prints as decimal
    ("0.5Ki", "512"),
    ("0.5", "500m"),
    ("1500m", "1500m"),
    ("-1Ki", "-1Ki"),
    ("-0.5", "-500m"),
])
def test_canonical_string(text, canonical):
    assert canonical_quantity(text) == canonical
    assert canonical_quantity(canonical) == canonical  # the canonical form is a fixed point


def test_no_suffix_beyond_exa():
    """Beyond E (and Ei) the magnitude folds into the number; the string reads back exactly."""
    assert canonical_quantity("1000E") == "1000E"
    assert canonical_quantity("1e21") == "1e21"  # exponents have no such limit
    assert canonical_quantity("5000e18") == "5e21"
    assert canonical_quantity("1024Ei") == "1024Ei"
    assert Quantity.parse("1000E").number == 10**21


@pytest.mark.parametrize(("a", "b", "cmp"), [
    ("0", "0", 0), ("100m", "50m", 1), ("50m", "100m", -1), ("10000T", "100Gi", 1),
    ("1Ki", "1024", 0), ("1e3", "1k", 0), ("0.5", "500m", 0),
])
def test_comparison_by_value_whatever_the_format(a, b, cmp):
    x, y = Quantity.parse(a), Quantity.parse(b)
    assert ((x > y) - (x < y)) == cmp
    assert (x == y) == (cmp == 0)
    assert (hash(x) == hash(y)) or cmp != 0


def test_comparison_with_integers():
    assert Quantity.parse("1k") == 1000
    assert Quantity.parse("500m") < 1
    assert Quantity.parse("0") <= 0
    assert Quantity.parse("-1m") < 0


def test_arithmetic_keeps_the_left_format():
    """TestAdd / TestSub: the receiver's format is kept."""
    assert Quantity.parse("10") + Quantity.parse("1e1") == 20
    assert str(Quantity.parse("1Ki") + Quantity.parse("1Ki")) == "2Ki"
    assert str(Quantity.parse("1Gi") - Quantity.parse("512Mi")) == "512Mi"
    assert str(Quantity.parse("10") - Quantity.parse("1Ki")) == "-1014"
    assert str(Quantity.parse("1") + 2) == "3"
    assert str(-Quantity.parse("9010m")) == "-9010m"
    assert Quantity(0) + Quantity.parse("50") == 50


@pytest.mark.parametrize(("text", "value", "milli"), [
    # TestNegativeValueRoundsAwayFromZero
    ("-.484785E-1", -1, -49),
    (".484785E-1", 1, 49),
    ("-0.0005", -1, -1),
    ("0.0005", 1, 1),
    ("-1500m", -2, -1500),
    ("1500m", 2, 1500),
    ("-9.5000000001Gi", -10200547329, -10200547328108),
    ("9.5000000001Gi", 10200547329, 10200547328108),
    ("-1", -1, -1000),
    ("1", 1, 1000),
    ("0", 0, 0),
    ("250m", 1, 250),
    ("1Ki", 1024, 1024000),
])
def test_value_and_milli_value_round_away_from_zero(text, value, milli):
    q = Quantity.parse(text)
    assert q.value() == value == int_value(text)
    assert q.milli_value() == milli == milli_value(text)


def test_exact_decimal_float_and_sign():
    assert Quantity.parse("7.5").as_dec() == Decimal("7.5")
    assert Quantity.parse("250m").as_dec() == Decimal("0.25")
    assert Quantity.parse("1Ki").as_dec() == Decimal(1024)
    assert Quantity.parse("1.5Gi").as_approximate_float() == 1.5 * 2**30
    assert [Quantity.parse(s).sign() for s in ("-1m", "0", "3")] == [-1, 0, 1]
    assert Quantity.parse("0Mi").is_zero()


def test_parse_quantity_is_quantity_parse():
    assert parse_quantity("128Mi") == Quantity.parse("128Mi")
    assert repr(parse_quantity("0.5")) == "Quantity('500m')"
