"""`xcbench campaign` arguments -> CampaignSpec."""

import pytest

from xcbench.cli import build_parser, main
from xcbench.commands.campaign import _spec


def parse(*argv):
    return build_parser().parse_args(["campaign", *argv])


def test_arguments_make_the_spec():
    args = parse("--gateway", "root://localhost:1094", "--files", "8", "--size", "1G",
                 "--concurrency", "64", "--mode", "tpc-http", "--client", "gfal2", "--optimizer",
                 "--optimizer-interval", "5", "--retries", "2", "--checksum", "target")
    s = _spec(args)
    assert (s.files, s.file_size, s.concurrency, s.mode, s.client) == (8, 1 << 30, 64, "tpc-http", "gfal2")
    assert s.optimizer.interval == 5 and s.retries == 2 and s.checksum == "target"
    assert s.timeout_for(1 << 20) == 602


def test_user_errors_are_one_line(capsys):
    assert main(["campaign", "--gateway", "root://localhost:1", "--source", "root://x:1"]) == 2
    assert "--source is for the TPC modes" in capsys.readouterr().err
    assert main(["campaign", "--gateway", "root://localhost:1", "--size", "lots"]) == 2
    assert "file_size" in capsys.readouterr().err


def test_bad_choice_is_refused():
    with pytest.raises(SystemExit):
        parse("--gateway", "x", "--mode", "pull")
