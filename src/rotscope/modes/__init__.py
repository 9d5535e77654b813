"""The run's modes (``rotscope run`` and its options): which workflow a run calls (``dispatch``), a
session of several subjects on one plan (``models_session``, run by ``session_run``, recorded in
``session.json`` by ``session_record``; ``--pair`` is its two-subject form, ``pair``), and which
deviations a paired subject makes on purpose (``intended``). Above the products (a search is one
mode), below the command line (ARCHITECTURE.md, "Layers")."""
