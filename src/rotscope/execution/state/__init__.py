"""A run folder's own state: its files and store (``run_folder``), its lock (``lock``), the
experiment's identity (``identity``) and the case export read from it (``case_export``). Below the
workflows; above the call path (a stored row's id is the call path's)."""
