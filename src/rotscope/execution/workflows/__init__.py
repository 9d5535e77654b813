"""The run's step machines and modes: one subject's run in steps (``run_steps``), the single run
(``runner``), the paired run (``pair``), the search (``search_run``, ``search_setup``), the
self-written session prompts (``self_session``), the dry run (``dry_run``) and the planned-line
check (``intended``). The top room of ``rotscope.execution``: it may import every room below."""
