"""Where calls run outside the event loop: the engine worker process (``worker``, started as
``python -m rotscope.execution.executors.worker``) and the Ray pool (``ray_executor``). Above the
call path, which they drive; independent of the run-folder state."""
