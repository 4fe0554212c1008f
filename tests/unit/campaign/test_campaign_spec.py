"""CampaignSpec validation and FTS defaults; endpoint and protocol choices."""

import pytest

from xcbench.campaign.endpoints import Endpoint, choose, endpoint
from xcbench.campaign.spec import CampaignSpec, OptimizerSpec
from xcbench.errors import XcbError


def test_defaults_follow_fts():
    s = CampaignSpec(file_size="1G")
    assert s.file_size == 1 << 30
    assert s.timeout_for(1 << 30) == 600 + 2 * 1024  # 600 s + 2 s/MiB
    assert s.checksum == "both" and s.overwrite is False and s.optimizer is None
    assert s.campaign_id.startswith("c") and CampaignSpec().campaign_id != s.campaign_id
    o = OptimizerSpec()
    assert (o.min_active, o.ema_alpha, o.increase_step, o.aggressive_increase_step,
            o.decrease_step, o.low_success_rate, o.base_success_rate) == (2, 0.1, 1, 2, 1, 97, 96)


def test_optimizer_from_bool_or_mapping():
    assert CampaignSpec(optimizer=True).optimizer == OptimizerSpec()
    s = CampaignSpec(optimizer={"interval": 5, "max_active": 30}, concurrency=8)
    assert s.optimizer.interval == 5 and s.max_active == 30
    assert CampaignSpec(optimizer=True, concurrency=8).max_active == 8
    assert CampaignSpec(optimizer=False).optimizer is None


@pytest.mark.parametrize("kw, field", [({"mode": "pull"}, "mode"), ({"client": "curl"}, "client"),
                                       ({"checksum": "md5"}, "checksum"),
                                       ({"concurrency": 0}, "concurrency"),
                                       ({"file_size": "1Q"}, "file_size"),
                                       ({"optimizer": {"mode": "wild"}}, "optimizer.mode")])
def test_bad_values_name_the_field(kw, field):
    with pytest.raises(XcbError, match=field):
        CampaignSpec(**kw)


def test_endpoints_from_urls():
    e = endpoint("root://localhost:1094//some/path", "destination")
    assert e.root_url == "root://localhost:1094" and e.http_url is None
    assert e.url("/xcb-c.f000001", "root") == "root://localhost:1094//xcb-c.f000001"
    assert e.url("/f", "root", user="xcb3") == "root://xcb3@localhost:1094//f"
    h = endpoint("http://localhost:8443", "destination")
    assert h.url("/f", "http") == "http://localhost:8443/f"
    with pytest.raises(XcbError, match="no root URL"):
        h.url("/f", "root")
    with pytest.raises(XcbError, match="not a root://, roots://, http:// or https://"):
        endpoint("ftp://x", "destination")
    s = endpoint("davs://site.example:1094/store", "destination")  # a secure site: https / roots
    assert s.url("/f", "http") == "https://site.example:1094/f"
    assert endpoint("roots://h:1094", "d").url("/f", "root", user="u") == "roots://u@h:1094//f"


def test_protocol_choices_say_why():
    ceph = Endpoint("d", "root://h:1", "http://h:1", backend="rados",
                    client_env={"XRD_CPUSEPGWRTRD": "0"})
    tmpfs = Endpoint("d", "root://h:1", "http://h:1", backend="tmpfs")
    scheme, kind, why = choose("push", "gfal2", ceph, None)
    assert (scheme, kind) == ("http", "gfal2") and "fchmod" in why[0]["why"]
    assert choose("push", "gfal2", tmpfs, None)[:2] == ("root", "gfal2")
    assert choose("push", "xrootd", ceph, None)[:2] == ("root", "xrootd")
    scheme, kind, why = choose("tpc-http", "xrootd", tmpfs, tmpfs)
    assert (scheme, kind) == ("http", "http") and any(c["what"] == "client" for c in why)
    with pytest.raises(XcbError, match="needs a source"):
        choose("tpc-root", "xrootd", tmpfs, None)
