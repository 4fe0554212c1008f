"""One meaning per unit symbol: sizes as Ceph and fio write them (4M = 4 MiB), rates and
capacities decimal unless an 'i' says binary; a symbol that would mean one thing here and another
there is refused with a line that names it and says what to write."""

from __future__ import annotations

import pytest

from xcbench.figures.units import parse_capacity, parse_rate, parse_size


def test_sizes_are_binary_with_or_without_i():
    assert parse_size("4M") == parse_size("4MiB") == 4 << 20
    assert parse_size("1G") == parse_size("1GiB") == 1 << 30


@pytest.mark.parametrize("value", ["1GB", "64kb", "4MB", "2TB"])
def test_a_decimal_looking_size_is_refused_naming_it(value):
    with pytest.raises(ValueError, match=f"'{value}' is ambiguous: write"):
        parse_size(value)


def test_capacities_and_rates_are_decimal_unless_binary():
    assert parse_capacity("18TB") == 18e12 and parse_capacity("16TiB") == 16 * 2.0 ** 40
    assert parse_rate("100Gb/s") == 100e9 / 8 and parse_rate("1GiB/s") == 2.0 ** 30


def test_a_bare_capacity_prefix_is_refused_naming_it():
    with pytest.raises(ValueError, match="'10T' is ambiguous: write 10TB .* or 10TiB"):
        parse_capacity("10T")


def test_a_matrix_with_an_ambiguous_size_names_file_cell_and_field(tmp_path, capsys):
    from xcbench.cli import main
    m = tmp_path / "m.yaml"
    m.write_text("name: m\ndefaults:\n  file_size: 1GB\nbackends:\n  tmpfs: {}\n")
    assert main(["matrix", "check", str(m)]) == 2
    cap = capsys.readouterr()
    err = (cap.out + cap.err).strip().splitlines()
    assert len(err) == 1 and "m.yaml: defaults: file_size: '1GB' is ambiguous" in err[0]
