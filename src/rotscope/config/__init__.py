"""The experiment file in one room: its model and loading (``experiment``), its sections and the
public strict base every section and component option class subclasses (``sections``), how
sections, subjects and outside components' sections assemble into one model (``assembly``), the
option markers (``options``), subjects (``subjects``) and the generated reference: the JSON Schema
and docs/experiment-file.md (``reference``). docs/experiment-file.md is the contract."""
