"""The release gate: pairing a baseline with a candidate, and the verdict."""
