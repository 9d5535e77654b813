"""compare: several runs of one experiment side by side (``rotscope compare DIR...``), in one
folder: which runs may be compared (``comparable``), the pairwise tests on shared items
(``pairwise``), the leaderboard and verdicts (``analysis``), its record (``record``, registered as
``comparison`` and ``comparison_row``), and its views: the table, CSV and Markdown (``table``), the
offline HTML page (``html``) and the figures (``figures``). A product of its own (ARCHITECTURE.md,
"Products"): it imports the flow's steps below it, never another product."""
