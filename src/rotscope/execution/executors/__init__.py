"""Where calls run, as a registered kind (``kinds``: ``ExecutorKind``, ``executor_for``; the built-ins
in ``builtin``): the engine worker process (``worker``, started as
``python -m rotscope.execution.executors.worker``), Ray workers (``ray_executor``) and a pool of
served replicas (``replicas``); in-process otherwise. Above the call path, which they drive;
independent of the run-folder state. Nothing is imported here, so the worker starts light."""
