"""The reasoning family (Context Rot Evaluation): items, the family, its layouts and its analysis."""
