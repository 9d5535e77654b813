"""The canary (``rotscope canary``): probes of a baseline run's own items sent to an endpoint
(``probes``), stored per check (``store``), tested sequentially against the baseline
(``rotscope.monitor.sequential``), the alert's body and lines (``alert``), its record (``record``,
registered as ``canary``) and the check loop with its signals (``loop``)."""
