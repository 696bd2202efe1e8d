"""ClickHouse as a ToolLens store (issue 41): a 2018 server cluster or the in-process engine.

* :mod:`db.clickhouse.url`: the ``clickhouse://`` and ``chdb://`` URLs and their password;
* :mod:`db.clickhouse.client`: one way to run SQL, insert rows and read Arrow tables on either
  a cluster of servers (``clickhouse-driver``, native protocol) or chdb (in process);
* :mod:`db.clickhouse.dialect`: a SQLAlchemy dialect that compiles the figure catalogue's Core
  statements to SQL both engines run, so ``db.queries`` read ClickHouse unchanged;
* :mod:`db.clickhouse.schema`: the tables (local tables per server, Distributed over them,
  sharded by trace) and the views that read the latest version of every trace;
* :mod:`db.clickhouse.session`: the import door (:class:`db.session.ImportSession`) on them.
"""
