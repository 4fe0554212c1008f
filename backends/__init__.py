"""Backends: turn a cell into a verified target a gateway can export (xcbench.backends).

Everything specific to one kind of storage lives in its package here; the gateway, the probe,
the campaign and the runner only read what a :class:`Target` says. One package per backend
(``backends/<name>/__init__.py`` sets ``BACKEND``; add the name to
``xcbench.cell.BACKENDS``).

What a new backend implements (say a libcephfs OSS like cern-eos/xrootd-cephfs, or a null OSS
like XrdBlackhole):

- ``name``, ``needs_cluster`` (the constructor then refuses ``cluster=None``) and
  ``verify_needs_gateway`` (verify writes through a gateway: the session starts one for it).
- ``target_defaults``: what every Target of the backend tells gateways and probes:
  ``osslib`` (the ofs.osslib library, e.g. "libXrdCephFS.so"; None = a POSIX export with
  oss.localroot = ``Target.path``), ``gateway_env`` (environment of xrootd/cmsd),
  ``ceph_conf_env`` (the gateway is a Ceph client: it gets CEPH_CONF with a conf the xrootd user
  can read), ``client_env`` (what clients of the gateway must set), ``shared_store`` (origins
  behind a redirector see one store: cms.dfs; else one subdir per origin), ``gateway_defaults``
  (tunables under the cell's, e.g. XrdCeph's async off), ``fio_engine`` ("files" in
  ``Target.path``, or "rados" on ``Target.pool``).
- ``prepare(cell) -> Target`` (record in ``created`` all it made), ``verify(target, gateway)``
  (evidence dict, or XcbError naming the field), ``cleanup(target)`` (exactly what prepare
  made), ``close()`` (what the instance holds, e.g. a mount), ``describe()``.
- class methods with POSIX defaults: ``gateway_oss(target, tunables)`` (the osslib directive:
  {"lib", "params", "cksio", "xattrlib"}), ``probe_room(object_size, file_size)``,
  ``findings(cell_id, tunables, facts)`` (its known-bad settings, as FINDING rows), and
  ``layout_evidence(target)`` (the layout as applied, for the fingerprint).

A null OSS would set ``osslib`` to its library and ``verify_needs_gateway`` (there is nothing to
look at but what the gateway answers); fio has no engine for it, so ``fio_engine`` "files" on a
scratch ``path`` is the nearest probe. A libcephfs OSS is the cephfs backend with ``osslib`` and
``ceph_conf_env`` set and ``gateway_oss`` naming the file system instead of a local root.
"""

from xcbench.backends.base import Backend, Target, get_backend

__all__ = ["Backend", "Target", "get_backend"]
