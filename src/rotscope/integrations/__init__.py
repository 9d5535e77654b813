"""Bridges to the evaluation tools people already use; each one an optional extra, imported only
when asked for (the rotscope CLI never imports them otherwise)."""
