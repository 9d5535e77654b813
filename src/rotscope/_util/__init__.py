"""Small helpers shared by several steps of the flow; nothing here knows a task, backend or view."""
