"""The embedded cluster's monitoring: what prometheus is told to scrape, and which processes
`cluster down` takes for the cluster's own (by command line, never by name alone)."""

from pathlib import Path

import yaml

from xcbench.ceph import monitoring


def test_server_config_scrapes_node_and_mgr_every_second():
    conf = yaml.safe_load(monitoring.server_config(["127.0.0.1:9100"], "10.77.0.1:9283"))
    assert conf["global"]["scrape_interval"] == "1s"
    jobs = {j["job_name"]: j for j in conf["scrape_configs"]}
    assert jobs["node"]["static_configs"][0]["targets"] == ["127.0.0.1:9100"]
    assert jobs["ceph"]["static_configs"][0]["targets"] == ["10.77.0.1:9283"]
    assert jobs["ceph"]["honor_labels"] is True  # the mgr's series name their hosts


def test_exporter_listens_where_told_and_names_the_state_dir(tmp_path):
    cmd = monitoring.exporter_cmd(tmp_path, "127.0.0.1:9999")
    assert "--web.listen-address=127.0.0.1:9999" in cmd and "--collector.disable-defaults" in cmd
    assert {f"--collector.{c}" for c in ("cpu", "diskstats", "netdev", "netclass", "uname")} <= set(cmd)
    assert monitoring.is_ours(["/usr/bin/" + cmd[0], *cmd[1:]], tmp_path)
    ns = monitoring.exporter_cmd(tmp_path, "10.77.0.30:9100", netns="xcb-s1")
    assert ns[:4] == ["ip", "netns", "exec", "xcb-s1"] and ns[4:] == monitoring.exporter_cmd(tmp_path, "10.77.0.30:9100")


def test_is_ours_needs_the_program_and_this_state_dir(tmp_path):
    state = tmp_path / "c"
    ours = ["/usr/bin/prometheus", f"--config.file={state}/prometheus/prometheus.yml"]
    assert monitoring.is_ours(ours, state)
    assert not monitoring.is_ours(ours, tmp_path / "c2")  # a sibling state dir's prefix
    assert not monitoring.is_ours(["/usr/bin/prometheus", f"--config.file={tmp_path}/c2/prometheus/p.yml"], state)
    assert not monitoring.is_ours(["/bin/sleep", f"{state}/prometheus/x"], state)  # not a monitoring program
    assert not monitoring.is_ours(["/usr/bin/prometheus", "--config.file=/etc/prometheus/prometheus.yml"], state)
    assert not monitoring.is_ours([], state)
    assert monitoring.needle(Path("/x/c")) == "/x/c/prometheus/"


def test_cluster_up_on_an_emulated_host_that_is_not_up_is_one_line(tmp_path, capsys, monkeypatch):
    from xcbench.cli import main
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "home"))
    rc = main(["cluster", "up", "--state-dir", str(tmp_path / "c"), "--osd-host", "nosuch"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--osd-host nosuch: no emulated host nosuch is up" in err
    assert not (tmp_path / "c").exists()


def test_the_mgr_module_port_is_one_no_outgoing_connection_can_be_given(monkeypatch):
    """The mgr binds its prometheus port seconds after it is chosen; meanwhile the kernel hands
    ports of its ephemeral range to every outgoing connection (to the same peer, one after the
    other), so the port is chosen below that range, and is free now."""
    import socket

    from xcbench.system import ports
    lo, _ = ports.ephemeral_range()
    got = {ports.late_bind_port() for _ in range(20)}
    assert all(1024 <= p < lo for p in got) and len(got) > 1
    with socket.socket() as s:
        s.bind(("127.0.0.1", got.pop()))
    # the range read from the kernel, and Linux's default where it cannot be read
    monkeypatch.setattr(ports, "EPHEMERAL", Path("/nonexistent/ip_local_port_range"))
    assert ports.ephemeral_range() == (32768, 60999)


def test_a_module_that_never_answers_names_what_the_mgr_said_of_it(tmp_path):
    log = tmp_path / "mgr.x.log"
    log.write_text("2026 mgr load Constructed class from module: prometheus\n"
                   "2026 mgr[prometheus] serve error: [Errno 98] Address already in use\n"
                   "2026 mgr something else\n")
    assert "Address already in use" in monitoring.mgr_module_said(log)
    assert "no mgr log" in monitoring.mgr_module_said(tmp_path / "absent.log")
