"""One run's step machines: one subject's run in steps (``run_steps``), the single run
(``runner``), the self-written session prompts (``self_session``), the dry run (``dry_run``) and
the checks of a planned run (``planned``). The top room of ``rotscope.execution``: it may import
every room below. The run's modes (sessions, the pair, the search) are ``rotscope.modes`` and the
search's product folder, above (ARCHITECTURE.md)."""
