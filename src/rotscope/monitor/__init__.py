"""The production monitor: privacy-safe outcome records (``schema``), their SQLite store
(``store``), the ingest of a JSONL file (``ingest``) and the rates ``rotscope monitor show``
breaks down (``rates``). The canary and the sequential test (issue 37, item 1) are to come; the
store's versioned schema leaves them room (a table each, a migration each)."""
