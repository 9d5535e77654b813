"""The ``cmd/`` backend (an agent or any program as the subject): the backend (``backend``), its
options (``options``), the process group each call runs in (``process``) under its keeper
(``contain``, run as a script), and the harness overhead a command adds (``harness_overhead``)."""
