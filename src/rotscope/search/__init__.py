"""search: the adaptive effective-length search (``rotscope run CONFIG --search``), in one folder:
its decisions on confidence sequences (``decisions``, ``confseq``), a new search's defaults
(``setup``), its steps run through the ordinary runner (``run``), and its views: the terminal lines
(``lines``) and the HTML report (``html``). A product of its own (ARCHITECTURE.md, "Products")."""
