"""Streams row events from a Lockstep server with python-mysql-replication
(PyPI mysql-replication) and prints them as JSON.

usage: pyrepl.py PORT file            # COM_BINLOG_DUMP from binlog.000001:4
       pyrepl.py PORT gtid GTID_SET   # COM_BINLOG_DUMP_GTID (auto_position)

The dump is non-blocking: the stream ends at the end of the binlog.
PYREPL_USER and PYREPL_PASSWORD set the account (root, no password by
default); PYREPL_SSL_CA makes both connections use TLS, verifying the
server's certificate against that CA.
"""
import json
import os
import sys

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

port, mode = int(sys.argv[1]), sys.argv[2]
settings = {
    "host": "127.0.0.1",
    "port": port,
    "user": os.environ.get("PYREPL_USER", "root"),
    "passwd": os.environ.get("PYREPL_PASSWORD", ""),
}
if os.environ.get("PYREPL_SSL_CA"):
    settings["ssl"] = {"ca": os.environ["PYREPL_SSL_CA"], "check_hostname": True}
kw = dict(
    connection_settings=settings,
    server_id=4242,
    blocking=False,
    only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
)
if mode == "file":
    kw.update(log_file="binlog.000001", log_pos=4, resume_stream=True)
else:
    kw.update(auto_position=sys.argv[3])


def text(v):
    """A value as text; a JSON document (dict or list, keys and strings
    perhaps bytes) as canonical JSON."""
    def plain(x):
        if isinstance(x, bytes):
            return x.decode()
        if isinstance(x, dict):
            return {plain(k): plain(e) for k, e in x.items()}
        if isinstance(x, list):
            return [plain(e) for e in x]
        return x
    if isinstance(v, (dict, list)):
        return json.dumps(plain(v), sort_keys=True)
    return str(v)


stream = BinLogStreamReader(**kw)
out = []
insecure = set()
for ev in stream:
    if os.environ.get("PYREPL_SSL_CA"):
        # Both of the reader's connections: the dump's and the one that
        # reads table definitions.
        for name in ("_stream_connection", "_ctl_connection"):
            sock = getattr(stream, name)._sock
            if getattr(sock, "version", lambda: None)() is None:
                insecure.add(name)
    for r in ev.rows:
        vals = r.get("values") or r.get("after_values")
        out.append({
            "type": type(ev).__name__,
            "schema": ev.schema,
            "table": ev.table,
            "row": {k: text(v) for k, v in vals.items()},
        })
stream.close()
if insecure:
    raise SystemExit("connections not using TLS: %s" % sorted(insecure))
print(json.dumps(out))
