"""Rendering prompts: the builder and its frame, placement of evidence, verification of spans and
joints, and the consistency of a case's layouts."""
