"""The production monitor: privacy-safe outcome records (``schema``), their SQLite store
(``store``), the ingest of a JSONL file (``ingest``), the rates ``rotscope monitor show`` breaks
down (``rates``), and the canary's parts (issue 37, item 1): the sequential test (``sequential``),
its tables in the store (``canary_store``), a check's alert body (``alert``) and the same test,
unpaired, of ingested outcomes against a baseline window (``window``), one value per
conversation or hour block (``units``). The report of the
store is to come; the store's versioned schema leaves it room (a migration each)."""
