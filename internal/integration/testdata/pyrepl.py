"""Streams row events from a Lockstep server with python-mysql-replication
(PyPI mysql-replication) and prints them as JSON.

usage: pyrepl.py PORT file            # COM_BINLOG_DUMP from binlog.000001:4
       pyrepl.py PORT gtid GTID_SET   # COM_BINLOG_DUMP_GTID (auto_position)

The dump is non-blocking: the stream ends at the end of the binlog.
"""
import json
import sys

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

port, mode = int(sys.argv[1]), sys.argv[2]
kw = dict(
    connection_settings={"host": "127.0.0.1", "port": port, "user": "root", "passwd": ""},
    server_id=4242,
    blocking=False,
    only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
)
if mode == "file":
    kw.update(log_file="binlog.000001", log_pos=4, resume_stream=True)
else:
    kw.update(auto_position=sys.argv[3])
stream = BinLogStreamReader(**kw)
out = []
for ev in stream:
    for r in ev.rows:
        vals = r.get("values") or r.get("after_values")
        out.append({
            "type": type(ev).__name__,
            "schema": ev.schema,
            "table": ev.table,
            "row": {k: str(v) for k, v in vals.items()},
        })
stream.close()
print(json.dumps(out))
