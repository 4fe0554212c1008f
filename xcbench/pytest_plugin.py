"""pytest plugin (entry point pytest11): the session-scoped ``ceph_cluster`` fixture.

Starts the embedded mini cluster once per session, or uses an existing cluster given with
``pytest --ceph-conf=PATH --ceph-id=NAME [--ceph-keyring=PATH]``.
"""
