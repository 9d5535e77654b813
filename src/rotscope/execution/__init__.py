"""Running work items: the runner, executors (in-process and the engine worker process), cost,
limits, the response cache, the delivery check, cache controls and the machine check (doctor).

Named ``execution`` rather than ``run``: ``rotscope.run`` is the library's function (design.md)."""
